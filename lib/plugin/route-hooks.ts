// Where the plugin's hooks go on a route, in one place.
//
// The plugin's hooks are route-level, added from its onRoute hook, so that
// routes without digests pay nothing and each hook has its route's options
// at hand. Where a hook stands in the route's list matters: the response's
// representation stage must run before @fastify/compress's onSend and its
// content stage after it; the request tap must come before any reader, the
// decoded-bytes check after compress's decompressing preParsing hook.
// compress adds those from an onRoute hook of its own, registered before or
// after this plugin. What this relies on, in fastify 5.12.8's lib/route.js:
// * route() runs every onRoute hook synchronously, in registration order,
//   before it returns (lines 299-302);
// * the route's hook options are read only at 'preReady' (lines 394-400:
//   instance hooks first, then `opts[hook]`), never earlier.
// So a microtask queued from our onRoute hook runs after every onRoute hook
// of the route and before fastify reads its lists: there the lists are
// final but for ours, and ours go first or last as declared below.
// test/plugin/route-hooks.test.ts fails if fastify changes either.
import type {
  RouteOptions,
  onErrorHookHandler,
  onRequestHookHandler,
  onSendHookHandler,
  preParsingHookHandler,
  preValidationHookHandler
} from 'fastify'

/** The hooks one concern of the plugin puts on a route, by place. */
export interface RouteHooks {
  /** First of the route's onRequest hooks. */
  readonly onRequestFirst?: onRequestHookHandler
  /** Last of the route's preParsing hooks (after any decoder). */
  readonly preParsingLast?: preParsingHookHandler
  /** First of the route's preValidation hooks. */
  readonly preValidationFirst?: preValidationHookHandler
  /** First of the route's onSend hooks. */
  readonly onSendFirst?: onSendHookHandler
  /**
   * Around the route's other onSend hooks: `before` first, `after` last; or
   * `alone` when the route has no other (nothing can change the payload
   * between the two, so one hook does both).
   */
  readonly onSendAround?: {
    readonly before: onSendHookHandler
    readonly after: onSendHookHandler
    readonly alone: onSendHookHandler
  }
  /** Last of the route's onError hooks. */
  readonly onErrorLast?: onErrorHookHandler
}

/** What the response and request concerns give the entry's onRoute hook: their hooks for a route, or null. */
export interface RouteHookInstaller<Params> {
  onRoute (routeOptions: RouteOptions, params: Params): RouteHooks | null
}

/** A route-level hook option as a list (fastify accepts one function or a list). */
export function hookList<T> (hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]
}

function defined<T> (values: ReadonlyArray<T | undefined>): T[] {
  return values.filter((v): v is T => v !== undefined)
}

/**
 * Puts the hooks of `sets` on the route once every onRoute hook has run.
 * Within one place, the sets' hooks keep the order of `sets`; onSend is
 * every `onSendFirst`, then the `onSendAround` group around the route's own
 * onSend hooks.
 */
export function placeHooks (routeOptions: RouteOptions, sets: ReadonlyArray<RouteHooks | null>): void {
  const hooks = sets.filter((s): s is RouteHooks => s !== null)
  queueMicrotask(() => {
    const firstRequest = defined(hooks.map((h) => h.onRequestFirst))
    if (firstRequest.length > 0) routeOptions.onRequest = [...firstRequest, ...hookList(routeOptions.onRequest)]
    const lastParsing = defined(hooks.map((h) => h.preParsingLast))
    if (lastParsing.length > 0) routeOptions.preParsing = [...hookList(routeOptions.preParsing), ...lastParsing]
    const firstValidation = defined(hooks.map((h) => h.preValidationFirst))
    if (firstValidation.length > 0) routeOptions.preValidation = [...firstValidation, ...hookList(routeOptions.preValidation)]
    const firstSend = defined(hooks.map((h) => h.onSendFirst))
    const around = hooks.find((h) => h.onSendAround !== undefined)?.onSendAround
    if (firstSend.length > 0 || around !== undefined) {
      const others = hookList(routeOptions.onSend)
      const middle = around === undefined ? others : others.length === 0 ? [around.alone] : [around.before, ...others, around.after]
      routeOptions.onSend = [...firstSend, ...middle]
    }
    const lastError = defined(hooks.map((h) => h.onErrorLast))
    if (lastError.length > 0) routeOptions.onError = [...hookList(routeOptions.onError), ...lastError]
  })
}
