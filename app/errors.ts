// The one error path: every failure the API reports is a DomainError subclass, mapped to
// `{ code, message }` by the global onError in app/http/error-handler.ts.

/** Every code the API can answer with; the SDK maps each to its own error class. */
export const ERROR_CODES = [
  "UNAUTHORIZED",
  "VALIDATION_FAILED",
  "MALFORMED_JSON",
  "MALFORMED_BODY",
  "UNSUPPORTED_MEDIA_TYPE",
  "BODY_TOO_LARGE",
  "ROUTE_NOT_FOUND",
  "INVALID_HOST",
  "SESSION_NOT_FOUND",
  "PARENT_NOT_FOUND",
  "SESSION_CONFLICT",
  "SESSION_TOO_DEEP",
  "SESSION_CYCLE",
  "CHILD_SESSION_LOCKED",
  "SANDBOX_DISABLED",
  "RESOURCE_OUT_OF_RANGE",
  "SETTING_OUT_OF_RANGE",
  "NOT_SANDBOXED",
  "CWD_OUTSIDE_MOUNTS",
  "PATH_NOT_FOUND",
  "FILE_NOT_FOUND",
  "FILE_REFUSED",
  "PORT_NOT_FORWARDED",
  "PORT_UNAVAILABLE",
  "VM_NOT_RUNNING",
  "WORKTREE_UNVERIFIED",
  "VM_CAP_REACHED",
  "RUNTIME_FAILED",
  "SHUTTING_DOWN",
  "ISOLATION_UNAVAILABLE",
  "DOCKER_UNAVAILABLE",
  "VM_NOT_FOUND",
  "UNSAFE_MOUNT",
  "MOUNTS_CHANGED",
  "NETWORK_POLICY_INVALID",
  "IMAGE_INVALID",
  "IMAGE_UNAVAILABLE",
  "IMAGE_TOO_LARGE",
  "IMAGE_NOT_FOUND",
  "IMAGE_IN_USE",
  "CA_ROTATION_FAILED",
  "SECRET_NOT_CONFIGURED",
  "EXEC_NOT_FOUND",
  "FORBIDDEN",
  "DIRECTORY_NOT_ACCESSIBLE",
  "USER_NOT_FOUND",
  "USER_EXISTS",
  "ACCOUNT_NOT_FOUND",
  "INTERNAL",
] as const;
/** Exported for the SDK contract check, which holds the SDK's codes to these. */
export type ErrorCode = (typeof ERROR_CODES)[number];

export class DomainError extends Error {
  constructor(
    readonly status: number,
    // Named `errorCode`, not `code`: Elysia reads `code` on thrown errors as its own registry key.
    readonly errorCode: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Thrown when the bearer token is missing or wrong. */
export class UnauthorizedError extends DomainError {
  constructor(message = "missing or wrong bearer token: send `Authorization: Bearer <token>` (print it with `bun run token`)") {
    super(401, "UNAUTHORIZED", message);
  }
}

/** Thrown when the body is not valid JSON. */
export class MalformedJsonError extends DomainError {
  constructor(detail: string) {
    super(400, "MALFORMED_JSON", `request body is not a JSON object: ${detail}`);
  }
}

/** Thrown for an exec body of the streamed-stdin form that is not a JSON line followed by the input. */
export class MalformedExecBodyError extends DomainError {
  constructor(detail: string) {
    super(400, "MALFORMED_BODY", `the exec body is not the request as one JSON line followed by the input: ${detail}`);
  }
}

/** Thrown for a background command with input: nobody would be there to send it as it runs. */
export class BackgroundWithStdinError extends DomainError {
  constructor() {
    super(400, "MALFORMED_BODY", "a background command takes no stdin (nothing feeds it once the request is answered); write the input to a file in the VM (PUT …/files) and read it there");
  }
}

/** Thrown when a body arrives with a content type other than JSON. */
export class UnsupportedMediaTypeError extends DomainError {
  /** `accepted`: the media types the route takes. */
  constructor(contentType: string, accepted: string[] = ["application/json"]) {
    const wanted = accepted.join(" or ");
    super(415, "UNSUPPORTED_MEDIA_TYPE", `content-type must be ${wanted}, got ${JSON.stringify(contentType || "(none)")}`);
  }
}

/** Thrown when a body is larger than the API accepts. */
export class BodyTooLargeError extends DomainError {
  /** `part`: which part of the body, when it is not the whole JSON object. */
  constructor(limitBytes: number, part?: string) {
    super(413, "BODY_TOO_LARGE", part ? `${part} exceeds ${limitBytes} bytes; send less` : `request body exceeds ${limitBytes} bytes; send a smaller JSON object`);
  }
}

/** Thrown when no route matches the path and method. */
export class RouteNotFoundError extends DomainError {
  constructor(method: string, path: string) {
    super(404, "ROUTE_NOT_FOUND", `no route for ${method} ${path}; see the OpenAPI document at GET /api/openapi.json`);
  }
}

/** Thrown when a request's Host header is missing or malformed, so that it has no URL to route. */
export class InvalidHostError extends DomainError {
  constructor() {
    super(400, "INVALID_HOST", "the Host header is missing or malformed: send the address you connected to, e.g. `Host: 127.0.0.1:7878`");
  }
}

/** Thrown when a session id is not registered. */
export class SessionNotFoundError extends DomainError {
  constructor(id: string) {
    super(404, "SESSION_NOT_FOUND", `session ${JSON.stringify(id)} is not registered; register it with POST /api/sessions first`);
  }
}

/** Thrown when a session names a parent or fork origin that is not registered. */
export class ParentNotFoundError extends DomainError {
  constructor(field: "parentID" | "forkOf", id: string) {
    super(404, "PARENT_NOT_FOUND", `${field} ${JSON.stringify(id)} is not registered; register it before its children and forks`);
  }
}

/** Thrown when a session is registered again with different data. */
export class SessionConflictError extends DomainError {
  constructor(id: string, field: string) {
    super(409, "SESSION_CONFLICT", `session ${JSON.stringify(id)} is already registered with a different ${field}; delete it first to re-register`);
  }
}

/** Thrown when a chain of parents is longer than the depth limit. */
export class SessionTooDeepError extends DomainError {
  constructor(id: string, maxDepth: number) {
    super(400, "SESSION_TOO_DEEP", `session ${JSON.stringify(id)} is nested more than ${maxDepth} levels below its root; register it under a shallower parent`);
  }
}

/** Thrown when walking parents comes back to a session already seen. */
export class SessionCycleError extends DomainError {
  constructor(id: string) {
    super(409, "SESSION_CYCLE", `the parent chain of session ${JSON.stringify(id)} loops back on itself; delete and re-register the sessions involved`);
  }
}

/** Thrown when a child session tries to set its own mode or resources. */
export class ChildSessionLockedError extends DomainError {
  constructor(id: string, rootSessionID: string) {
    super(409, "CHILD_SESSION_LOCKED", `session ${JSON.stringify(id)} is a child of root ${JSON.stringify(rootSessionID)} and follows it; change the root instead`);
  }
}

/** Thrown when a session's sandbox is changed while sandboxing is off server-wide. */
export class SandboxDisabledError extends DomainError {
  constructor() {
    super(409, "SANDBOX_DISABLED", "sandboxing is disabled for the whole server; enable it with PATCH /api/settings/sandbox {\"enabled\": true}");
  }
}

/** Thrown when cpus or memoryMib is below the minimum or above what the host has. */
export class ResourceOutOfRangeError extends DomainError {
  constructor(message: string) {
    super(400, "RESOURCE_OUT_OF_RANGE", message);
  }
}

/** Thrown when a non-resource setting is outside its allowed range. */
export class SettingOutOfRangeError extends DomainError {
  constructor(message: string) {
    super(400, "SETTING_OUT_OF_RANGE", message);
  }
}

/** Thrown when a command is sent to a session whose sandbox is off: the manager never runs it on the host. */
export class NotSandboxedError extends DomainError {
  constructor(id: string, reason: string) {
    super(409, "NOT_SANDBOXED", `session ${JSON.stringify(id)} is not sandboxed (${reason}); the manager never runs commands on the host`);
  }
}

/** Thrown when a command's working directory lies outside the session's mounts. */
export class CwdOutsideMountsError extends DomainError {
  constructor(cwd: string, mounts: string[]) {
    super(400, "CWD_OUTSIDE_MOUNTS", `cwd ${JSON.stringify(cwd)} is outside the session's mounts (${mounts.join(", ")}); run the command from inside the repository`);
  }
}

/** Thrown when a session's directory or a command's cwd does not exist on the host. */
export class PathNotFoundError extends DomainError {
  constructor(what: string, path: string) {
    super(400, "PATH_NOT_FOUND", `${what} ${JSON.stringify(path)} does not exist on the host; check the path`);
  }
}

/** Thrown when a path asked for in a session's VM (files API) does not exist there. */
export class FileNotFoundError extends DomainError {
  constructor(path: string) {
    super(404, "FILE_NOT_FOUND", `${JSON.stringify(path)} does not exist in the session's VM; check the path (it is resolved inside the VM)`);
  }
}

/** Thrown when a file cannot be read or written in a session's VM as asked; the message says why and what to do. */
export class FileRefusedError extends DomainError {
  constructor(message: string) {
    super(400, "FILE_REFUSED", message);
  }
}

/** Thrown when a session has no forward of that port. */
export class PortNotForwardedError extends DomainError {
  constructor(rootSessionID: string, port: number) {
    super(404, "PORT_NOT_FORWARDED", `port ${port} of session ${rootSessionID}'s VM is not forwarded; GET /api/sessions/${rootSessionID}/ports lists what is`);
  }
}

/** Thrown when a forward cannot be opened as asked: the host port is taken, or the guest port already forwarded. */
export class PortUnavailableError extends DomainError {
  constructor(message: string) {
    super(409, "PORT_UNAVAILABLE", message);
  }
}

/** Thrown when something needs the session's VM running (a port forward) and it is not. */
export class VmNotRunningError extends DomainError {
  constructor(rootSessionID: string, what: string) {
    super(409, "VM_NOT_RUNNING", `session ${rootSessionID}'s VM is not running, so ${what}; run a command in it first (e.g. start the server), then retry`);
  }
}

/** Thrown when a linked worktree's back-link to its main repository does not verify. */
export class WorktreeUnverifiedError extends DomainError {
  constructor(top: string, detail: string) {
    super(400, "WORKTREE_UNVERIFIED", `${top} looks like a linked git worktree, but ${detail}; the main repository is not mounted. Repair it with \`git worktree repair\``);
  }
}

/** Thrown when the global cap of running VMs is reached and no VM may be evicted. */
export class VmCapReachedError extends DomainError {
  constructor(message: string) {
    super(429, "VM_CAP_REACHED", message);
  }
}

/** Thrown when the runtime failed or is unavailable (not the guest command's own failure). */
export class RuntimeFailedError extends DomainError {
  constructor(message: string) {
    super(503, "RUNTIME_FAILED", message);
  }
}

/** Thrown for a command that arrives while the manager stops its VMs for a shutdown: it never runs. */
export class ShuttingDownError extends DomainError {
  constructor() {
    super(503, "SHUTTING_DOWN", "the manager is shutting down, so the command was not run; retry once it is back");
  }
}

/** Thrown when a setting or a session asks for an isolation tier that does not work on this host. */
export class IsolationUnavailableError extends DomainError {
  constructor(reason: string) {
    super(400, "ISOLATION_UNAVAILABLE", `${reason}; nothing was changed. Choose a tier that works here (GET /api/health lists them), or auto`);
  }
}

/**
 * Thrown when a Docker Engine cannot be had: the session's tier cannot hold one (400, nothing changed), or
 * its VM could not start one (409: the setting is off, the image has no dockerd, the daemon never answered).
 */
export class DockerUnavailableError extends DomainError {
  constructor(status: 400 | 409, reason: string) {
    super(status, "DOCKER_UNAVAILABLE", reason);
  }
}

/** Thrown when a VM name is not one the manager knows. */
export class VmNotFoundError extends DomainError {
  constructor(name: string) {
    super(404, "VM_NOT_FOUND", `no VM named ${JSON.stringify(name)}; list them with GET /api/vms`);
  }
}

/** Thrown when a session's directory would mount too much of the host (e.g. `/`), or its git metadata is not what git makes. */
export class UnsafeMountError extends DomainError {
  constructor(path: string, rule = "it exposes the host") {
    super(400, "UNSAFE_MOUNT", `refusing to mount ${JSON.stringify(path)} into a sandbox: ${rule}; start the session inside a project directory`);
  }
}

/** Thrown when what a session's mounts were pinned to at its first command has changed (e.g. a directory swapped for a symlink). */
export class MountsChangedError extends DomainError {
  constructor(sessionId: string, detail: string) {
    super(
      409,
      "MOUNTS_CHANGED",
      `session ${sessionId}'s mounts were pinned when its sandbox first started, and ${detail}; nothing ran. ` +
        `If the change is intended, delete the session (DELETE /api/sessions/${sessionId}) and register it again`,
    );
  }
}

/** Thrown when a network policy entry is not a domain, an address or a known keyword. */
export class NetworkPolicyInvalidError extends DomainError {
  constructor(message: string) {
    super(400, "NETWORK_POLICY_INVALID", message);
  }
}

/** Thrown when an image choice is not a valid OCI reference or Debian package list, or the runtime cannot boot that kind. */
export class ImageInvalidError extends DomainError {
  constructor(message: string) {
    super(400, "IMAGE_INVALID", message);
  }
}

/** Thrown when an image could not be built or pulled (registry down, unknown tag, apt failure): nothing was booted. */
export class ImageUnavailableError extends DomainError {
  constructor(image: string, reason: string) {
    super(503, "IMAGE_UNAVAILABLE", `image ${image} is not available, so nothing was booted: ${reason}`);
  }
}

/**
 * Thrown when a build or pull wrote more than the maxImageMib setting: it was stopped while unpacking and
 * its partial directory removed. A 413: what was asked for is too large to take in.
 */
export class ImageTooLargeError extends DomainError {
  constructor(image: string, limitMib: number, reachedMib: number) {
    super(
      413,
      "IMAGE_TOO_LARGE",
      `image ${image} is larger than the limit of ${limitMib} MiB (maxImageMib): it had reached ${reachedMib} MiB when it was stopped, so it was removed and nothing was booted. Raise the limit (session-sandbox settings set maxImageMib=32G) or choose a smaller image`,
    );
  }
}

/** Thrown when an image the caller named is not in the cache. */
export class ImageNotFoundError extends DomainError {
  constructor(key: string) {
    super(404, "IMAGE_NOT_FOUND", `no cached image ${JSON.stringify(key)}; list them with GET /api/images or \`bun run images\``);
  }
}

/** Thrown when removing an image that a setting, a session or a VM still uses. */
export class ImageInUseError extends DomainError {
  constructor(key: string, users: string[]) {
    super(409, "IMAGE_IN_USE", `image ${key} is in use by ${users.join(", ")}; change those to another image first`);
  }
}

/** Thrown when a new manager CA could not be generated or written (disk full, permissions); the current CA stays in use. */
export class CaRotationFailedError extends DomainError {
  constructor(reason: string) {
    super(503, "CA_ROTATION_FAILED", `the manager CA was not rotated and the current one stays in use: ${reason}; fix what it names (a full disk, the permissions of <data dir>/ca), then retry`);
  }
}

/** Thrown when a grant names a secret the manager does not have configured (SANDBOX_SECRETS). */
export class SecretNotConfiguredError extends DomainError {
  constructor(unknown: string[], configured: string[]) {
    const list = configured.length > 0 ? `the configured ones are ${configured.join(", ")}` : "none is configured (SANDBOX_SECRETS is empty)";
    super(400, "SECRET_NOT_CONFIGURED", `no secret named ${unknown.map((n) => JSON.stringify(n)).join(", ")} is configured on this manager; ${list}. Grant a configured name, or add it to SANDBOX_SECRETS and restart the manager`);
  }
}

/** Thrown when a cancel names a call id that no running command of the session's root has. */
export class ExecNotFoundError extends DomainError {
  constructor(sessionId: string, callID: string) {
    super(404, "EXEC_NOT_FOUND", `no command with call id ${JSON.stringify(callID)} is running in session ${JSON.stringify(sessionId)}'s sandbox (it may have finished); see GET /api/sessions/${sessionId}/execs`);
  }
}

/** Thrown when a user's token (not the manager's own) asks for what only the manager's token may do. */
export class ForbiddenError extends DomainError {
  constructor(what: string) {
    super(403, "FORBIDDEN", `${what} needs the manager's own token: a user's token may register and use its own sessions only (docs/non-root.md)`);
  }
}

/**
 * Thrown when a user's token names a directory that user cannot read, write and enter: the manager (root)
 * would mount it read-write into a VM where the guest is root, so it mounts only what the user could use.
 */
export class DirectoryNotAccessibleError extends DomainError {
  constructor(user: string, path: string) {
    super(403, "DIRECTORY_NOT_ACCESSIBLE", `user ${user} cannot read, write and enter ${path}, so no VM of theirs may mount it; use a directory of their own`);
  }
}

export class UserNotFoundError extends DomainError {
  constructor(name: string) {
    super(404, "USER_NOT_FOUND", `no user ${JSON.stringify(name)} has a token; list them with GET /api/users or \`session-sandbox users\``);
  }
}

export class UserExistsError extends DomainError {
  constructor(name: string) {
    super(409, "USER_EXISTS", `user ${JSON.stringify(name)} has a token already; to replace it, remove the user first (DELETE /api/users/${name}), then add it again`);
  }
}

/** Thrown when a user is added whose account this host does not have (or is root, whose token is the manager's own). */
export class AccountNotFoundError extends DomainError {
  constructor(name: string, why: string) {
    super(400, "ACCOUNT_NOT_FOUND", `cannot add user ${JSON.stringify(name)}: ${why}`);
  }
}
