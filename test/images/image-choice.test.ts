// The image choice grammar (no VM): references normalized as docker does, loopback registries spoken to
// over plain HTTP, package names checked, equal choices sharing one key, and what msb boots.
import { describe, expect, test } from "bun:test";
import { createEventBus } from "../../app/events/event-bus";
import { createLogger } from "../../app/log";
import { openDatabase } from "../../app/db/open";
import { createImagesRepo } from "../../app/db/images-repo";
import { isLoopbackRegistry, normalizeImageChoice, parseReference, sourceKeyOf } from "../../app/images/image-choice";
import { createImageService, imageNormalizerFor } from "../../app/images/image-service";
import { skopeoReason } from "../../app/images/oci-pull";
import { rmSync } from "node:fs";
import { makeTempDir } from "../helpers";

describe("OCI references", () => {
  test.each([
    ["debian", "docker.io/library/debian:latest"],
    ["debian:bookworm-slim", "docker.io/library/debian:bookworm-slim"],
    ["team/node:22", "docker.io/team/node:22"],
    ["ghcr.io/org/tool:v1.2", "ghcr.io/org/tool:v1.2"],
    ["localhost/x", "localhost/x:latest"],
    ["127.0.0.1:5000/team/node:22", "127.0.0.1:5000/team/node:22"],
    [`127.0.0.1:5000/a@sha256:${"a".repeat(64)}`, `127.0.0.1:5000/a@sha256:${"a".repeat(64)}`],
    [`debian:12@sha256:${"b".repeat(64)}`, `docker.io/library/debian:12@sha256:${"b".repeat(64)}`],
  ])("%s → %s", (input, expected) => {
    expect(normalizeImageChoice({ kind: "oci", reference: input })).toEqual({ kind: "oci", reference: expected });
  });

  test.each(["", "team/UPPER:v1", "a b", "-flag", "x:", "x@sha256:123", "a//b", "a/b/", `${"a".repeat(256)}`, "x:tag\nother", "../x"])("%j → 400 IMAGE_INVALID naming it", (input) => {
    expect(() => parseReference(input)).toThrow(expect.objectContaining({ status: 400, errorCode: "IMAGE_INVALID" }));
  });

  test("loopback registries (127/8, localhost, [::1]) are plain HTTP; every other registry must present TLS", () => {
    for (const domain of ["127.0.0.1:5000", "127.1.2.3", "localhost:5000", "localhost", "[::1]:5000"]) expect(isLoopbackRegistry(domain)).toBe(true);
    for (const domain of ["docker.io", "10.0.0.1:5000", "localhost.example.com", "127.0.0.1.nip.io", "registry:5000"]) expect(isLoopbackRegistry(domain)).toBe(false);
  });

  test("skopeo's fatal line → only its message, without the parser's prefix", () => {
    const stderr = 'time="2026-11-30T17:04:52Z" level=fatal msg="Error parsing image name \\"docker://127.0.0.1:1/x:v1\\": pinging container registry 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused"\n';
    expect(skopeoReason(stderr)).toBe("pinging container registry 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused");
  });
});

describe("recipe choices", () => {
  test("packages sorted and unique, so equal choices share one key; [] is the built-in image", () => {
    expect(sourceKeyOf(normalizeImageChoice({ kind: "recipe", packages: ["jq", "htop", "jq"] }))).toBe("recipe:htop,jq");
    expect(sourceKeyOf(normalizeImageChoice({ kind: "recipe", packages: [] }))).toBe("default");
  });

  test("a Dockerfile path → normalized inside the repository; absolute or above it → 400 naming it", () => {
    expect(normalizeImageChoice({ kind: "dockerfile", path: "./.opencode-sandbox//Dockerfile" })).toEqual({ kind: "dockerfile", path: ".opencode-sandbox/Dockerfile" });
    expect(sourceKeyOf(normalizeImageChoice({ kind: "dockerfile", path: "docker/Dockerfile" }))).toBe("dockerfile:docker/Dockerfile");
    for (const path of ["/etc/Dockerfile", "../other/Dockerfile", "a/../../Dockerfile"]) {
      expect(() => normalizeImageChoice({ kind: "dockerfile", path })).toThrow(expect.objectContaining({ status: 400, message: expect.stringContaining(`${JSON.stringify(path)} must be relative to the repository`) }));
    }
  });

  test("a name Debian would not accept, or too many → 400 naming it", () => {
    for (const name of ["Bad_Name", "-x", "a", "pkg;rm", "pkg name", "../x"]) {
      expect(() => normalizeImageChoice({ kind: "recipe", packages: [name] })).toThrow(expect.objectContaining({ status: 400, message: expect.stringContaining(JSON.stringify(name)) }));
    }
    expect(() => normalizeImageChoice({ kind: "recipe", packages: Array.from({ length: 65 }, (_, i) => `p${i}`) })).toThrow(/at most 64/);
  });
});

describe("on msb (its driver pulls OCI references itself)", () => {
  test("an OCI choice boots its reference, the built-in choice SANDBOX_MSB_IMAGE; extra packages → 400 with the reason", async () => {
    const dataDir = makeTempDir("ss-images-msb-");
    const db = openDatabase(dataDir);
    const images = createImageService({
      repo: createImagesRepo(db),
      maxImageBytes: () => 1024 * 1024 * 1024,
      family: "oci",
      builtInRootfs: "/nonexistent",
      cacheDir: `${dataDir}/images`,
      defaultOciImage: "debian:bookworm-slim",
      events: createEventBus(),
      log: createLogger("silent"),
      choosers: () => new Map(),
      vmImages: () => new Set(),
      dockerfileBuilder: "no gVisor here",
    });
    expect(await images.bootImage({ kind: "oci", reference: "127.0.0.1:5000/team/node:22" })).toBe("127.0.0.1:5000/team/node:22");
    await expect(images.bootImage({ kind: "dockerfile", path: "Dockerfile" }, { directory: dataDir, network: { mode: "none" }, rootSessionID: "ses_any" })).rejects.toThrow(/image the repository's Dockerfile is not available.*microVMs boot OCI images: build and push the image/);
    expect(await images.bootImage({ kind: "recipe", packages: [] })).toBe("debian:bookworm-slim");
    expect(() => imageNormalizerFor("oci")({ kind: "recipe", packages: ["jq"] })).toThrow(/extra packages need the local runtime/);
    expect(images.list()).toEqual([]);
    db.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
});
