// A network policy of the wrong shape or with bad entries. The HTTP app answers it as a 400 with this
// code (the app's own check in app/services/network-policy.ts throws its DomainError of the same code).
export class NetworkPolicyInvalidError extends Error {
  readonly code = "NETWORK_POLICY_INVALID";
  constructor(message: string) {
    super(message);
    this.name = "NetworkPolicyInvalidError";
  }
}
