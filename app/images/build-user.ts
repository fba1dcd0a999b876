// A Dockerfile build's USER: resolved inside the build VM, from the image being built, into the guest ids
// and HOME its RUN steps run with (the gVisor driver runs a command as another guest user).
import { guestUserProblem, type ExecSink, type GuestUser, type RuntimeDriver } from "../../runtime/driver";
import { stepFailure } from "./build-error";
import type { StepSource } from "./dockerfile";

/**
 * Resolves USER's `name[:group]` as Docker does, from the /etc/passwd and /etc/group of the image being
 * built (as the steps before it left them): a name must be there; a numeric uid need not (its group is then
 * root's). Prints `uid gid home`. $1: the USER text, $2: the static busybox.
 */
const RESOLVE_USER_SCRIPT = `bb=$2 u=\${1%%:*} g=
case $1 in *:*) g=\${1#*:} ;; esac
entry=$($bb awk -F: -v u="$u" '$1 == u || (u ~ /^[0-9]+$/ && $3 == u) { print $3 " " $4 " " $6; exit }' /etc/passwd 2>/dev/null)
if [ -n "$entry" ]; then set -- $entry; uid=$1 gid=$2 home=\${3:-/}
else case $u in *[!0-9]*) echo "unable to find user $u: no matching entries in /etc/passwd" >&2; exit 3 ;; esac; uid=$u gid=0 home=/; fi
case $g in
  "") ;;
  *[!0-9]*) gid=$($bb awk -F: -v g="$g" '$1 == g { print $3; exit }' /etc/group 2>/dev/null)
    [ -n "$gid" ] || { echo "unable to find group $g: no matching entries in /etc/group" >&2; exit 3; } ;;
  *) gid=$g ;;
esac
echo "$uid $gid $home"`;

export async function resolveUser(build: { driver: RuntimeDriver; vmName: string }, busybox: string, user: string, source: StepSource): Promise<{ user: GuestUser; home: string }> {
  let stdout = "";
  let stderr = "";
  const decoder = new TextDecoder();
  const sink: ExecSink = { stdout: (chunk) => void (stdout += decoder.decode(chunk)), stderr: (chunk) => void (stderr += decoder.decode(chunk)) };
  const result = await build.driver.exec(build.vmName, { argv: [busybox, "sh", "-c", RESOLVE_USER_SCRIPT, "sh", user, busybox], cwd: "/", timeoutMs: 60_000 }, sink);
  const [uid, gid, home] = stdout.trim().split(" ");
  const ids = { uid: Number(uid), gid: Number(gid) };
  const problem = result.exitCode === 0 ? guestUserProblem(ids) : stderr.trim() || `exit ${result.exitCode}`;
  if (problem !== undefined) throw stepFailure(source, `USER ${user}: ${problem}`);
  return { user: ids, home: home || "/" };
}
