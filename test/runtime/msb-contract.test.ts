// Runs the RuntimeDriver contract suite against MsbDriver driving the stand-in msb, a FAKE msb binary
// (test/runtime-msb/stand-in-msb.ts) whose guests are real local-runtime VMs: real microVMs cannot boot here.
import { makeStandInMsb } from "../runtime-msb/stand-in-harness";
import { fixtureTarget, runtimeContractSuite } from "./contract-suite";

const target = fixtureTarget(makeStandInMsb, (standIn) => standIn.rootfs, (standIn) => standIn.cleanUp());

runtimeContractSuite("msb via the stand-in msb (a fake)", {
  setup: target.setup,
  teardown: target.teardown,
  // msb's own rules, which the stand-in keeps (see stand-in-msb.ts and its recorded fixtures):
  fractionalCpus: false,
  execBootsStopped: true,
  signalExitCode: 255,
  reportsOomKills: false,
  // The driver's probe reads this host's KVM and replays msb doctor's real verdict: no microVM boots here.
  probeProblemHere: /kvm_pvm|CPU virt/,
});
