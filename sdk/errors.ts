// Typed SDK errors: one class per condition the manager reports, built in one place (toSdkError).
import type { ErrorCode } from "./api-types";

/** Base of every error the SDK throws. `status` is the HTTP status, or 0 when no answer came. */
export class SandboxError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode | "MANAGER_UNREACHABLE" | "UNEXPECTED_RESPONSE",
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Thrown when the token is missing or wrong. */
export class UnauthorizedError extends SandboxError {}
/** Thrown when the request does not match the route's schema (422). */
export class ValidationFailedError extends SandboxError {}
/** Thrown when the body was not a JSON object. */
export class MalformedJsonError extends SandboxError {}
/** Thrown when an exec body of the streamed-stdin form is not the request as one JSON line followed by the input. */
export class MalformedBodyError extends SandboxError {}
/** Thrown when a body was sent with a content type other than JSON. */
export class UnsupportedMediaTypeError extends SandboxError {}
/** Thrown when a body is over the manager's size limit. */
export class BodyTooLargeError extends SandboxError {}
/** Thrown when the manager has no such route (an SDK newer than the manager). */
export class RouteNotFoundError extends SandboxError {}
/** Thrown when the request's Host header is missing or malformed (a proxy in between rewrote it badly). */
export class InvalidHostError extends SandboxError {}
/** Thrown when the session id is not registered. */
export class SessionNotFoundError extends SandboxError {}
/** Thrown when a parentID or forkOf names an unregistered session. */
export class ParentNotFoundError extends SandboxError {}
/** Thrown when a session id is registered again with different data. */
export class SessionConflictError extends SandboxError {}
/** Thrown when a session is nested deeper than the manager allows. */
export class SessionTooDeepError extends SandboxError {}
/** Thrown when a session's parent chain loops. */
export class SessionCycleError extends SandboxError {}
/** Thrown when a child session's mode or resources are changed (they follow the root). */
export class ChildSessionLockedError extends SandboxError {}
/** Thrown when a session is toggled while sandboxing is off server-wide. */
export class SandboxDisabledError extends SandboxError {}
/** Thrown when cpus or memoryMib is below the minimum or above the host. */
export class ResourceOutOfRangeError extends SandboxError {}
/** Thrown when another setting is out of its range. */
export class SettingOutOfRangeError extends SandboxError {}
/** Thrown when a command is sent to a session whose sandbox is off; nothing ran anywhere. */
export class NotSandboxedError extends SandboxError {}
/** Thrown when a command's cwd lies outside the session's mounts. */
export class CwdOutsideMountsError extends SandboxError {}
/** Thrown when a session directory or cwd does not exist on the host. */
export class PathNotFoundError extends SandboxError {}
/** Thrown when a path asked for in a session's VM does not exist there (files API). */
export class FileNotFoundError extends SandboxError {}
/** Thrown when a file cannot be read or written in a session's VM as asked; the message says why. */
export class FileRefusedError extends SandboxError {}
/** Thrown when a session has no forward of that port. */
export class PortNotForwardedError extends SandboxError {}
/** Thrown when a forward cannot be opened: the host port is taken, or the guest port is forwarded already. */
export class PortUnavailableError extends SandboxError {}
/** Thrown when a port forward needs the session's VM running and it is not. */
export class VmNotRunningError extends SandboxError {}
/** Thrown when a linked worktree's back-link to its main repository does not verify. */
export class WorktreeUnverifiedError extends SandboxError {}
/** Thrown when the cap of running VMs is reached and none can be evicted; the message names the holders. */
export class VmCapReachedError extends SandboxError {}
/** Thrown when the runtime failed or is unavailable; the command did not run. */
export class RuntimeFailedError extends SandboxError {}
/** Thrown when a command arrives while the manager shuts down (it never ran): retry once it is back. */
export class ShuttingDownError extends SandboxError {}
/** Thrown when the isolation tier asked for does not work on the manager's host; nothing was changed. */
export class IsolationUnavailableError extends SandboxError {}
/** Thrown when the session's tier cannot hold a Docker Engine, or its VM could not start one (the reason says which). */
export class DockerUnavailableError extends SandboxError {}
/** Thrown when a VM name is unknown. */
export class VmNotFoundError extends SandboxError {}
/** Thrown when a session directory would expose too much of the host (e.g. `/`). */
export class UnsafeMountError extends SandboxError {}
/** Thrown when a session's pinned mounts changed since its sandbox first started (nothing ran). */
export class MountsChangedError extends SandboxError {}
/** Thrown when a network policy entry is not a domain, an address or a known keyword. */
export class NetworkPolicyInvalidError extends SandboxError {}
/** Thrown when an image choice is not a valid OCI reference or package list, or the runtime cannot boot it. */
export class ImageInvalidError extends SandboxError {}
/** Thrown when an image could not be built or pulled (the message says why); nothing was booted. */
export class ImageUnavailableError extends SandboxError {}
/** A build or pull unpacked past maxImageMib: stopped while unpacking, removed, nothing booted. */
export class ImageTooLargeError extends SandboxError {}
/** A user's token asked for what only the manager's own token may do (403). */
export class ForbiddenError extends SandboxError {}
/** A user's token named a directory that user cannot read, write and enter (403). */
export class DirectoryNotAccessibleError extends SandboxError {}
export class UserNotFoundError extends SandboxError {}
export class UserExistsError extends SandboxError {}
/** The host has no such account, or it is root (400). */
export class AccountNotFoundError extends SandboxError {}
/** Thrown when a cached image key is unknown. */
export class ImageNotFoundError extends SandboxError {}
/** Thrown when removing an image that a setting, session or VM still uses. */
export class ImageInUseError extends SandboxError {}
/** Thrown when the manager CA could not be rotated (its files could not be written); the current CA stays in use. */
export class CaRotationFailedError extends SandboxError {}
/** Thrown when a grant names a secret the manager does not have configured; the message lists the configured names. */
export class SecretNotConfiguredError extends SandboxError {}
/** Thrown when a cancel names a call id that no running command of the session has (it may have finished). */
export class ExecNotFoundError extends SandboxError {}
/** Thrown when the manager failed internally (a bug: it is logged there). */
export class InternalError extends SandboxError {}
/** Thrown when the manager could not be reached at all (down, refused, timed out). */
export class ManagerUnreachableError extends SandboxError {}
/** Thrown when the manager answered something the SDK cannot read. */
export class UnexpectedResponseError extends SandboxError {}

type ErrorClass = new (status: number, code: ErrorCode, message: string) => SandboxError;

const CLASS_BY_CODE = {
  UNAUTHORIZED: UnauthorizedError,
  VALIDATION_FAILED: ValidationFailedError,
  MALFORMED_JSON: MalformedJsonError,
  MALFORMED_BODY: MalformedBodyError,
  UNSUPPORTED_MEDIA_TYPE: UnsupportedMediaTypeError,
  BODY_TOO_LARGE: BodyTooLargeError,
  ROUTE_NOT_FOUND: RouteNotFoundError,
  INVALID_HOST: InvalidHostError,
  SESSION_NOT_FOUND: SessionNotFoundError,
  PARENT_NOT_FOUND: ParentNotFoundError,
  SESSION_CONFLICT: SessionConflictError,
  SESSION_TOO_DEEP: SessionTooDeepError,
  SESSION_CYCLE: SessionCycleError,
  CHILD_SESSION_LOCKED: ChildSessionLockedError,
  SANDBOX_DISABLED: SandboxDisabledError,
  RESOURCE_OUT_OF_RANGE: ResourceOutOfRangeError,
  SETTING_OUT_OF_RANGE: SettingOutOfRangeError,
  NOT_SANDBOXED: NotSandboxedError,
  CWD_OUTSIDE_MOUNTS: CwdOutsideMountsError,
  PATH_NOT_FOUND: PathNotFoundError,
  FILE_NOT_FOUND: FileNotFoundError,
  FILE_REFUSED: FileRefusedError,
  PORT_NOT_FORWARDED: PortNotForwardedError,
  PORT_UNAVAILABLE: PortUnavailableError,
  VM_NOT_RUNNING: VmNotRunningError,
  WORKTREE_UNVERIFIED: WorktreeUnverifiedError,
  VM_CAP_REACHED: VmCapReachedError,
  RUNTIME_FAILED: RuntimeFailedError,
  SHUTTING_DOWN: ShuttingDownError,
  ISOLATION_UNAVAILABLE: IsolationUnavailableError,
  DOCKER_UNAVAILABLE: DockerUnavailableError,
  VM_NOT_FOUND: VmNotFoundError,
  UNSAFE_MOUNT: UnsafeMountError,
  MOUNTS_CHANGED: MountsChangedError,
  NETWORK_POLICY_INVALID: NetworkPolicyInvalidError,
  IMAGE_INVALID: ImageInvalidError,
  IMAGE_UNAVAILABLE: ImageUnavailableError,
  IMAGE_TOO_LARGE: ImageTooLargeError,
  IMAGE_NOT_FOUND: ImageNotFoundError,
  IMAGE_IN_USE: ImageInUseError,
  CA_ROTATION_FAILED: CaRotationFailedError,
  SECRET_NOT_CONFIGURED: SecretNotConfiguredError,
  EXEC_NOT_FOUND: ExecNotFoundError,
  FORBIDDEN: ForbiddenError,
  DIRECTORY_NOT_ACCESSIBLE: DirectoryNotAccessibleError,
  USER_NOT_FOUND: UserNotFoundError,
  USER_EXISTS: UserExistsError,
  ACCOUNT_NOT_FOUND: AccountNotFoundError,
  INTERNAL: InternalError,
} satisfies Record<ErrorCode, ErrorClass>;

/** The one place an HTTP failure becomes a typed error. */
export function toSdkError(status: number, body: unknown): SandboxError {
  const { code, message } = (body ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === "string" && code in CLASS_BY_CODE && typeof message === "string") {
    return new CLASS_BY_CODE[code as ErrorCode](status, code as ErrorCode, message);
  }
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return new UnexpectedResponseError(status, "UNEXPECTED_RESPONSE", `manager answered ${status}: ${String(text).slice(0, 300)}`);
}
