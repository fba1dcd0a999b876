// Builds a VM's root directory: the shared read-only image shown through idmapped binds, plus
// mount points for the session's directories — without ever writing into the shared image.
//
// The image is owned by host root. Binding it straight in would show every file as `nobody` (the VM
// runs in an unprivileged uid range), and mount points for host paths like /work/repo could only be
// created inside the shared image. Instead each VM gets a small directory of its own that holds the
// image's top-level symlinks, one read-only idmapped bind per top-level image directory, and the
// mount points; crun makes it the (read-only) root.
import { chownSync, existsSync, lchownSync, mkdirSync, readdirSync, readlinkSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { GUEST_HOME } from "../guest-layout";
import type { OciMount } from "./oci-config";

/** Top-level directories the VM gets from its own mounts, never from the image. */
const OWN_MOUNTS = new Set(["proc", "sys", "dev", "tmp", "run", "home"]);
/** Paths inside these cannot take a session mount. */
const RESERVED = ["/proc", "/sys", "/dev", "/run", GUEST_HOME];

export type GuestRootPlan = { symlinks: [string, string][]; imageDirs: string[]; plainDirs: string[]; mountPoints: string[] };

function isUnder(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir === "/" ? "/" : `${dir}/`);
}

/** Checks the session mounts against the image and decides what the root directory holds. Throws on a conflict. */
export function planGuestRoot(image: string, destinations: string[]): GuestRootPlan {
  const plan: GuestRootPlan = { symlinks: [], imageDirs: [], plainDirs: [], mountPoints: [] };
  for (const dest of destinations) {
    if (dest === "/" || dest === "/tmp" || dest === "/home" || RESERVED.some((r) => isUnder(dest, r))) {
      throw new Error(`mount path ${dest} is reserved inside the VM`);
    }
  }
  for (const entry of readdirSync(image, { withFileTypes: true })) {
    const top = `/${entry.name}`;
    if (entry.isSymbolicLink()) {
      plan.symlinks.push([entry.name, readlinkSync(join(image, entry.name))]);
      continue;
    }
    if (!entry.isDirectory()) continue;
    const wanted = destinations.filter((d) => isUnder(d, top));
    if (OWN_MOUNTS.has(entry.name)) plan.plainDirs.push(entry.name);
    else if (wanted.length === 0) plan.imageDirs.push(entry.name);
    // An empty image directory (/srv, /mnt, /opt…) can host session mounts: it is replaced, not shown.
    else if (readdirSync(join(image, entry.name)).length === 0) plan.plainDirs.push(entry.name);
    else throw new Error(`mount path ${wanted[0]} is inside the image's ${top}, which is read-only`);
  }
  // /tmp and /home are tmpfs mounts: crun creates mount points there itself, inside the VM. A mount
  // nested in another session mount (git metadata inside the repository) lands on the host path itself.
  const nested = (d: string) => destinations.some((other) => other !== d && d.startsWith(`${other}/`));
  const covered = (d: string) => d.startsWith("/tmp/") || d.startsWith("/home/") || nested(d);
  const tops = new Set([...plan.imageDirs, ...plan.plainDirs, ...plan.symlinks.map(([n]) => n)]);
  for (const dest of destinations) {
    if (covered(dest)) continue;
    const top = dest.split("/")[1] ?? "";
    if (plan.symlinks.some(([n]) => n === top)) throw new Error(`mount path ${dest} goes through the image symlink /${top}`);
    if (!tops.has(top)) {
      plan.plainDirs.push(top);
      tops.add(top);
    }
    plan.mountPoints.push(dest);
  }
  return plan;
}

/** Creates the directory tree for `plan` at `root`, owned by the VM's root uid. */
export function materializeGuestRoot(plan: GuestRootPlan, root: string, hostUid: number): void {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { mode: 0o755 });
  chownSync(root, hostUid, hostUid);
  const mkdirOwned = (relative: string) => {
    let path = root;
    for (const part of relative.split("/").filter(Boolean)) {
      path = join(path, part);
      if (!existsSync(path)) {
        mkdirSync(path, { mode: 0o755 });
        chownSync(path, hostUid, hostUid);
      }
    }
  };
  for (const [name, target] of plan.symlinks) {
    symlinkSync(target, join(root, name));
    lchownSync(join(root, name), hostUid, hostUid);
  }
  for (const name of [...plan.imageDirs, ...plan.plainDirs]) mkdirOwned(name);
  for (const dest of plan.mountPoints) mkdirOwned(dest);
}

/** One read-only bind per top-level image directory; `idmap` shows the image's root-owned files as root. */
export function imageMounts(plan: GuestRootPlan, image: string): OciMount[] {
  return plan.imageDirs.map((name) => ({
    destination: `/${name}`,
    type: "bind",
    source: join(image, name),
    options: ["rbind", "ro", "nosuid", "nodev", "idmap"],
  }));
}
