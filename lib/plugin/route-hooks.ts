// Where the plugin's hooks go on a route (docs/design.md, "Where the hooks run"): fastify 5.12.8
// lib/route.js runs every onRoute hook in route() (lines 299-302) and reads the hook lists at
// preReady (394-400), so a microtask from our onRoute hook sees them final but for ours.
import type {
  RouteOptions,
  onErrorHookHandler,
  onRequestHookHandler,
  onSendHookHandler,
  preParsingHookHandler,
  preValidationHookHandler
} from 'fastify'

/** The hooks one concern of the plugin puts on a route, first or last of the route's own. */
export interface RouteHooks {
  readonly onRequestFirst?: onRequestHookHandler
  /** After any decoder. */
  readonly preParsingLast?: preParsingHookHandler
  readonly preValidationFirst?: preValidationHookHandler
  readonly onSendFirst?: onSendHookHandler
  /** `before` and `after` the route's other onSend hooks, or `alone` when it has none (one hook does both). */
  readonly onSendAround?: {
    readonly before: onSendHookHandler
    readonly after: onSendHookHandler
    readonly alone: onSendHookHandler
  }
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

/** Puts the hooks of `sets` on the route, in the order of `sets`, once every onRoute hook has run. */
export function placeHooks (routeOptions: RouteOptions, sets: ReadonlyArray<RouteHooks | null>): void {
  const ours = <K extends keyof RouteHooks>(key: K): Array<NonNullable<RouteHooks[K]>> =>
    sets.flatMap((hooks) => hooks?.[key] ?? [])
  queueMicrotask(() => {
    routeOptions.onRequest = [...ours('onRequestFirst'), ...hookList(routeOptions.onRequest)]
    routeOptions.preParsing = [...hookList(routeOptions.preParsing), ...ours('preParsingLast')]
    routeOptions.preValidation = [...ours('preValidationFirst'), ...hookList(routeOptions.preValidation)]
    const others = hookList(routeOptions.onSend)
    const [around] = ours('onSendAround')
    const middle = around === undefined
      ? others
      : others.length === 0 ? [around.alone] : [around.before, ...others, around.after]
    routeOptions.onSend = [...ours('onSendFirst'), ...middle]
    routeOptions.onError = [...hookList(routeOptions.onError), ...ours('onErrorLast')]
  })
}
