// Public surface of the egress proxy: the policy evaluator, secret rules and startEgressProxy.
export { formatAllowEntry, NETWORK_KEYWORDS, parseAllowEntry, type AllowEntry, type NetworkKeyword, type PortRange } from "./allow-entry";
export { allowlistProblems, checkAddress, checkName, compilePolicy, compilePolicyLenient, evaluate, formatTarget, HOST_ALIAS, MAX_ALLOW_ENTRIES } from "./policy";
export type { NetworkPolicy } from "./network-policy";
export type { CompiledPolicy, Decision, Denial, EgressTarget, NameCheck, Policy, PolicyContext } from "./policy";
export { compileSecrets, MIN_SECRET_VALUE_LENGTH, secretRuleProblem, type SecretRule } from "./secrets";
export { DEFAULT_HOW_TO_ALLOW, DEFAULT_LIMITS, startEgressProxy, type EgressProxy, type EgressProxyOptions } from "./proxy";
export type { EgressDenial, EgressLimits, Interception } from "./connection-context";
export type { Resolver } from "./upstream";
