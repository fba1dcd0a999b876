// The one import point of @peculiar/x509. Its dependency injection (tsyringe) needs the Reflect metadata
// API loaded first (the library's own README says so), and an ES module's imports run in order.
import "reflect-metadata";

export * from "@peculiar/x509";
