// A counter that goes up every `ms` while the page is visible: pages poll what events do not announce
// (usage numbers) with it, and a hidden tab asks nothing.
import { useEffect, useState } from "preact/hooks";

export function useTicker(ms: number): number {
  const [count, setCount] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => document.visibilityState === "visible" && setCount((n) => n + 1), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return count;
}
