// The lifecycle and query builders: exact argv of start, stop, remove, volume remove, list, inspect, ping, version, doctor.
import { describe, expect, test } from "bun:test";
import {
  buildDoctorArgs,
  buildInspectArgs,
  buildListArgs,
  buildPingArgs,
  buildRemoveArgs,
  buildStartArgs,
  buildStopArgs,
  buildVersionArgs,
  buildVolumeRemoveArgs,
  InvalidSpecError,
} from "../../runtime/msb";

const name = "ocm-session-0123456789ab";

describe("lifecycle builders", () => {
  test("start → msb start NAME (no -q: it would hide the error text)", () => {
    expect(buildStartArgs(name)).toEqual(["start", name]);
  });

  test("stop → graceful with a whole-second timeout; force → --force", () => {
    expect(buildStopArgs(name)).toEqual(["stop", name, "--timeout=10"]);
    expect(buildStopArgs(name, { force: true })).toEqual(["stop", name, "--force"]);
  });

  test("remove → msb remove NAME --force", () => {
    expect(buildRemoveArgs(name)).toEqual(["remove", name, "--force"]);
  });

  test("volume remove → msb volume remove VOLUME", () => {
    expect(buildVolumeRemoveArgs("ocm-vol-1")).toEqual(["volume", "remove", "ocm-vol-1"]);
  });

  test("list with labels → JSON format and one sorted --label per pair", () => {
    expect(buildListArgs({ z: "1", a: "" })).toEqual(["list", "--format=json", "--label=a=", "--label=z=1"]);
    expect(buildListArgs()).toEqual(["list", "--format=json"]);
  });

  test("inspect → JSON format", () => {
    expect(buildInspectArgs(name)).toEqual(["inspect", name, "--format=json"]);
  });

  test("ping, version, doctor → fixed argv", () => {
    expect(buildPingArgs()).toEqual(["list", "--quiet"]);
    expect(buildVersionArgs()).toEqual(["--version"]);
    expect(buildDoctorArgs()).toEqual(["doctor"]);
  });

  test("a name that could be read as a flag → InvalidSpecError", () => {
    for (const build of [buildStartArgs, buildStopArgs, buildRemoveArgs, buildInspectArgs, buildVolumeRemoveArgs]) {
      expect(() => build("--all")).toThrow(InvalidSpecError);
    }
    expect(() => buildListArgs({ "--x": "1" })).toThrow(InvalidSpecError);
  });
});
