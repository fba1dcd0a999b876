// Who keeps a mount busy, for the error of an unmount that failed with "target is busy": the processes of
// this mount namespace whose working directory, root or an open file lies under it, and the mounts below
// it. Read only when an unmount failed, so that a failure says what held the disk instead of leaving a guess.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { readMountinfo } from "./cgroup-layout";

const MAX_HOLDERS = 10;

function under(path: string, dir: string): boolean {
  return path === dir || path.startsWith(`${dir}/`);
}

function linkOf(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined; // gone meanwhile, or not ours to read
  }
}

function commandOf(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "?";
  }
}

/** What of one process lies under `dir`: "cwd", "root" or "fd N". */
function holdingsOf(pid: string, dir: string): string[] {
  const held = ["cwd", "root"].filter((what) => {
    const target = linkOf(`/proc/${pid}/${what}`);
    return target !== undefined && under(target, dir);
  });
  let fds: string[] = [];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    // Exited meanwhile.
  }
  for (const fd of fds) {
    const target = linkOf(`/proc/${pid}/fd/${fd}`);
    if (target !== undefined && under(target, dir)) held.push(`fd ${fd}`);
  }
  return held;
}

/** Descriptions of what holds `dir` (at most MAX_HOLDERS), e.g. `pid 123 (git): cwd, fd 4` or `mount below: /x/y`. */
export function mountHolders(dir: string): string[] {
  const holders: string[] = [];
  for (const { mountPoint } of readMountinfo()) if (mountPoint !== dir && under(mountPoint, dir)) holders.push(`mount below: ${mountPoint}`);
  for (const pid of readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
    if (holders.length >= MAX_HOLDERS) break;
    const held = holdingsOf(pid, dir);
    if (held.length > 0) holders.push(`pid ${pid} (${commandOf(pid)}): ${held.join(", ")}`);
  }
  return holders.slice(0, MAX_HOLDERS);
}
