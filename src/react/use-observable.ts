/**
 * `useObservable`: an Observable's latest value in a React component, through `useSyncExternalStore`.
 * @module
 */
import { useMemo, useSyncExternalStore } from 'react';
import type { Observable, Subscription } from 'rxjs';

/**
 * The latest value `source$` emitted (`initial` until its first emission), read through React's
 * `useSyncExternalStore`: every component reading one store in one render sees the same value, in concurrent
 * rendering too (no tearing), and an emission re-renders the component.
 *
 * - **One subscription per identity.** `source$` is subscribed once, when the component first commits, and kept while
 *   its identity stays the same; a new identity unsubscribes from the old one and subscribes to the new. Pass a
 *   stable Observable (`useMemo`, or one made outside the component): `useObservable(a$.pipe(map(f)), x)` written
 *   inline is a new Observable at every render, and a cold one would start again each time.
 * - **Unsubscribes on unmount.** Unsubscribing is deferred to a microtask, so StrictMode's mount–unmount–mount in
 *   development keeps the one subscription (a cold `startRun` is not posted twice) while a real unmount still
 *   releases it (and cancels what unsubscribing cancels, e.g. a run started with `startRun`).
 * - **Errors.** When `source$` errors, the hook throws the error at the next render (an error boundary catches it).
 *   Completion keeps the last value. On the server (`renderToString`) it renders `initial` and subscribes to nothing.
 *
 * @example
 * function Transcript({ agent }: { agent: Agent }) {
 *   const messages$ = useMemo(() => agent.events$.pipe(assembleMessages(agent.state.messages)), [agent]);
 *   const messages = useObservable(messages$, agent.state.messages);
 *   return messages.map((m, i) => <MessageView key={i} message={m} />);
 * }
 */
export function useObservable<T>(source$: Observable<T>, initial: T): T {
  // `initial` is read once per store: a new `initial` with the same `source$` does not reset the value shown.
  const store = useMemo(() => observableStore(source$, initial), [source$]);
  const value = useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);
  if (store.failed) throw store.error;
  return value;
}

/** @internal An Observable as a `useSyncExternalStore` store: one subscription shared by its listeners. */
export interface ObservableStore<T> {
  readonly subscribe: (onChange: () => void) => () => void;
  readonly getSnapshot: () => T;
  readonly getServerSnapshot: () => T;
  readonly failed: boolean;
  readonly error: unknown;
}

/** @internal */
export function observableStore<T>(source$: Observable<T>, initial: T): ObservableStore<T> {
  let value = initial;
  const listeners = new Set<() => void>();
  let subscription: Subscription | undefined;
  let releasing = false;
  const store = {
    failed: false,
    error: undefined as unknown,
    getSnapshot: () => value,
    getServerSnapshot: () => initial,
    subscribe: (onChange: () => void) => {
      listeners.add(onChange);
      releasing = false;
      if (subscription === undefined) {
        const notify = () => {
          for (const listener of [...listeners]) listener();
        };
        subscription = source$.subscribe({
          next: (next) => {
            value = next;
            notify();
          },
          error: (error: unknown) => {
            store.failed = true;
            store.error = error;
            notify();
          },
        });
      }
      return () => {
        listeners.delete(onChange);
        if (listeners.size > 0) return;
        // StrictMode unmounts and mounts again synchronously: wait a microtask before letting go.
        releasing = true;
        queueMicrotask(() => {
          if (!releasing || listeners.size > 0) return;
          releasing = false;
          subscription?.unsubscribe();
          subscription = undefined;
        });
      };
    },
  };
  return store;
}
