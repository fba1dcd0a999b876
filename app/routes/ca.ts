// /api/ca: the manager CA that every VM trusts — read its certificate, or rotate it (a new key; each VM
// trusts the new CA from its next command, which recreates it keeping its volume).
import { Elysia } from "elysia";
import { CaRotationFailedError } from "../errors";
import { errors, ManagerCaView, RotatedCa } from "../http/schemas";
import type { Logger } from "../log";
import type { ManagerCa } from "../tls/manager-ca";

function view(ca: ManagerCa): ManagerCaView {
  return { certificatePem: ca.certPem(), fingerprint: ca.fingerprint(), notAfter: ca.notAfter() };
}

export function caRoutes(ca: ManagerCa, log: Logger) {
  return new Elysia({ prefix: "/api/ca", tags: ["ca"] })
    .get("", () => view(ca), {
      response: { 200: ManagerCaView, ...errors(401, 403) },
      detail: { operationId: "getCa", summary: "The manager CA's certificate (PEM), SHA-256 fingerprint and expiry; its key never leaves the manager" },
    })
    .post(
      "/rotate",
      async () => {
        const previousFingerprint = ca.fingerprint();
        try {
          await ca.rotate();
        } catch (error) {
          throw new CaRotationFailedError((error as Error).message);
        }
        log.info("manager CA rotated", { fingerprint: ca.fingerprint(), previousFingerprint });
        return { ...view(ca), previousFingerprint };
      },
      {
        response: { 200: RotatedCa, ...errors(401, 403, 503) },
        detail: { operationId: "rotateCa", summary: "Replace the manager CA with a new key; every VM trusts the new one from its next command (recreated, keeping its volume)" },
      },
    );
}
