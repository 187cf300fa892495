// Routes the plugin cannot cover because of registration order, named in one
// warning at `ready`.
//
// The plugin reaches a route through its onRoute hook. fastify runs onRoute
// hooks synchronously inside route() (fastify 5.12 lib/route.js:298-303), over
// the hooks the declaring instance has at that moment; a child instance copies
// its parent's onRoute hooks when it is created (lib/hooks.js:73-91,
// buildHooks, called from lib/plugin-override.js:47), and addHook('onRoute')
// adds to one instance only (fastify.js:638-639). So with
// `app.register(digestFields)` not awaited, a route declared right after it
// on the same instance is declared before the plugin is loaded and never seen,
// and so are routes declared before the register call and routes of plugins
// registered before it; routes of plugins registered after it, and routes
// declared in `app.after()` or after a later `await`, are seen.
//
// Why not cover them instead: the hooks of a route are fixed at preReady from
// the instance's hooks plus the route's own options object
// (lib/route.js:394-400), which only onRoute hooks can reach. Instance-level
// hooks do reach these routes, but they run before every route-level hook
// (the same lines), so the content digest would be taken before
// @fastify/compress's route-level onSend and request verification after its
// route-level decoder: wrong whenever compress saw the route. And the route's
// `digest` option would go unread. So they are named, with the fix.
//
// How they are found. fastify has no API that lists routes (lib/plugin/route-tree.ts);
// `printRoutes({ includeMeta: ['onError'] })` draws every route with its
// onError hooks (fastify.js:826-832; defaultBuildPrettyMeta, fastify.js:984-995,
// shows the route context's hooks). Two no-op onError hooks mark the routes
// (onError hooks only run when an error is sent, lib/reply.js:960-973, so
// they cost nothing on other responses):
// * one added with addHook: it reaches every route of the plugin's scope,
//   earlier ones and those of child instances created earlier included
//   (fastify.js:640-655 propagates it to existing children; lib/route.js:394-400
//   reads the instance hooks at preReady);
// * one appended to each route the onRoute hook sees, `digest: false` routes
//   included (those are left alone on purpose).
// A route with the first and not the second is in scope and was not seen.
// Routes of other scopes have neither; the 404 handler is no route of the
// router. The check runs in an onReady hook, which fastify runs in avvio's
// ready callback, after preReady has set the route hooks (fastify.js:563-572),
// once per registration (buildHooks gives child instances no onReady hooks,
// lib/hooks.js:87).
import type { FastifyInstance, onErrorHookHandler } from 'fastify'
import type { RouteHooks } from './route-hooks'
import { parseRouteTree } from './route-tree'

// Each registration marks with its own names, so that the plugin registered
// in two sibling scopes does not report the other scope's routes.
let registrations = 0

function marker (name: string): onErrorHookHandler {
  const hook: onErrorHookHandler = function (_request, _reply, _error, done) { done() }
  return Object.defineProperty(hook, 'name', { value: name })
}

/** `GET,HEAD /path`, with the route's constraints when it has any. */
function describeRoute (methods: readonly string[], path: string, constraints: string): string {
  return `${methods.join(',')} ${path}${constraints === '' ? '' : ` ${constraints}`}`
}

/**
 * The routes of the scope that the plugin's onRoute hook did not see, from
 * the text of `printRoutes({ includeMeta: ['onError'] })` and the printed
 * names (`name()`) of the two markers.
 */
export function unseenRoutes (printed: string, scope: string, seen: string): string[] {
  const out: string[] = []
  for (const route of parseRouteTree(printed)) {
    const hooks = route.meta.get('onError')
    if (!Array.isArray(hooks) || !hooks.includes(scope) || hooks.includes(seen)) continue
    out.push(describeRoute(route.methods, route.path, route.constraints))
  }
  return out
}

/**
 * Starts the check for one registration of the plugin on `fastify`; returns
 * what the plugin's onRoute hook calls for every route it sees.
 */
export function watchRouteCoverage (fastify: FastifyInstance): RouteHooks {
  const id = ++registrations
  const scope = marker(`digestFieldsScope${id}`)
  const seen = marker(`digestFieldsSeen${id}`)
  fastify.addHook('onError', scope)
  fastify.addHook('onReady', function digestFieldsCoverage (done) {
    const missed = unseenRoutes(fastify.printRoutes({ includeMeta: ['onError'] }), `${scope.name}()`, `${seen.name}()`)
    if (missed.length > 0) {
      const routes = missed.length === 1 ? '1 route was declared before the plugin was loaded and gets' : `${missed.length} routes were declared before the plugin was loaded and get`
      fastify.log.warn({ routes: missed },
        `fastify-digest-fields: ${routes} no digest fields and no request verification: ${missed.join('; ')}. ` +
        'Declare routes after `await app.register(digestFields)` has resolved, or in plugins registered after it.')
    }
    done()
  })
  // The mark goes last on the route's onError list, where an onRoute hook
  // that replaces the list cannot drop it (lib/plugin/route-hooks.ts).
  return { onErrorLast: seen }
}
