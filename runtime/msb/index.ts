// Public surface of the msb driver: the driver, attestation, the pure command-line builders and parsers.
export { attest } from "./attest";
export { buildCreateArgs, TMP_GUEST_PATH } from "./create-args";
export { buildExecArgs, buildKillTreeArgs, EXEC_MARKER_ENV } from "./exec-args";
export {
  buildDoctorArgs,
  buildInspectArgs,
  buildListArgs,
  buildPingArgs,
  buildRemoveArgs,
  buildStartArgs,
  buildStopArgs,
  buildVersionArgs,
  buildVolumeRemoveArgs,
} from "./lifecycle-args";
export { MSB_PINNED_VERSION, resolveMsbBinary } from "./msb-binary";
export { MsbDriver, type MsbDriverOptions } from "./msb-driver";
export type { MsbTraceEvent } from "./msb-cli";
export { parseInspect, parseList, type MsbVmInfo } from "./parse-inspect";
export { InvalidSpecError } from "./spec-checks";
