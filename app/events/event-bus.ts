// The manager's event stream: what happened to VMs and commands, each with its reason. Subscribers get
// their own bounded queue, so a slow reader drops its oldest events instead of holding memory or the
// publisher up.
import type { StopReason } from "../../workers/protocol";

export type VmEventStatus = "booting" | "running" | "stopped" | "evicted" | "removed" | "actor-crashed";

export type SandboxEvent =
  | { type: "vm"; vmName: string; rootSessionID: string | null; status: VmEventStatus; reason: StopReason | null; at: number }
  | {
      type: "exec";
      phase: "started" | "finished";
      vmName: string;
      rootSessionID: string;
      callID: string | null;
      exitCode: number | null;
      timedOut: boolean;
      cancelled: boolean;
      at: number;
    }
  | {
      /** An image being built or pulled: progress lines while it works, then ready or failed (with the reason). */
      type: "image";
      /** What was asked, normalized: `default`, `recipe:<packages>` or `oci:<reference>`. */
      image: string;
      phase: ImageEventPhase;
      detail: string | null;
      at: number;
    }
  | {
      /** The egress proxy put a secret's value into a request that went out (the name, never the value). */
      type: "secret";
      phase: "substituted";
      name: string;
      /** The request's target host. */
      host: string;
      rootSessionID: string;
      vmName: string;
      at: number;
    };

export type ImageEventPhase = "building" | "pulling" | "progress" | "ready" | "failed" | "removed";

export const SUBSCRIBER_QUEUE_LIMIT = 1_000;

type Subscriber = { queue: SandboxEvent[]; wake: (() => void) | undefined; dropped: number };

export function createEventBus() {
  const subscribers = new Set<Subscriber>();

  function publish(event: SandboxEvent): void {
    for (const subscriber of subscribers) {
      if (subscriber.queue.length >= SUBSCRIBER_QUEUE_LIMIT) {
        subscriber.queue.shift();
        subscriber.dropped += 1;
      }
      subscriber.queue.push(event);
      subscriber.wake?.();
    }
  }

  /** Events from now on, until `signal` aborts. */
  async function* subscribe(signal: AbortSignal): AsyncGenerator<SandboxEvent> {
    const subscriber: Subscriber = { queue: [], wake: undefined, dropped: 0 };
    subscribers.add(subscriber);
    const onAbort = () => subscriber.wake?.();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      while (!signal.aborted) {
        const next = subscriber.queue.shift();
        if (next) {
          yield next;
          continue;
        }
        await new Promise<void>((resolve) => (subscriber.wake = resolve));
        subscriber.wake = undefined;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      subscribers.delete(subscriber);
    }
  }

  return { publish, subscribe, subscriberCount: () => subscribers.size };
}

export type EventBus = ReturnType<typeof createEventBus>;
