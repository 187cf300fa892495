// Reading back the routes of fastify's `printRoutes()` text. Pure: no
// fastify here.
//
// fastify has no API that lists its routes: the answer of its maintainers is
// an onRoute hook (fastify/fastify#930, #1155), which only sees the routes
// declared after it exists. `fastify.printRoutes()` is the documented way to
// see all of them (fastify docs/Reference/Server.md, "printRoutes"), with the
// `includeMeta` option to show the hooks of each route. It is text, drawn by
// find-my-way 9 (lib/pretty-print.js, printObjectTree / serializeNode /
// serializeRoute), in this shape for the merged tree (no `method` option):
//
//   └── /                              a node: its key, 4 columns deeper per level
//       ├── a (GET, HEAD)               a route: ` (METHODS)` after the key
//       │   • (onError) ["x()"]         its meta: `• (key) JSON`, one line per key
//       │   a (POST) {"version":"1.0"}  another route of the same node (key repeated),
//       │                               with its constraints as JSON
//       └── users/
//           └── :id|:name (GET)         a parametric node: its names joined by `|`
//
// A route's path is the concatenation of the keys from the root down (the
// default `commonPrefix: true` draws every node: with `commonPrefix: false`,
// find-my-way drops the prefix of a wildcard node). An empty root key is
// drawn as `(empty root node)`.

export interface PrintedRoute {
  /** The keys from the root down, joined: the path as the router stores it. */
  readonly path: string
  readonly methods: readonly string[]
  /** The route's constraints as printed (JSON), or ''. */
  readonly constraints: string
  /** The `includeMeta` values shown for the route, parsed. */
  readonly meta: ReadonlyMap<string, unknown>
}

const BRANCHES = ['├── ', '└── ']
const INDENTS = ['│   ', '    ']
const EMPTY_ROOT = '(empty root node)'
const META = '• ('

// ` (GET, HEAD)` and optional ` {constraints}`, ending a line.
const TAIL = / \(([^\s(),]+(?:, [^\s(),]+)*)\)(?: (\{.*\}))?$/
// A node's key, then that tail. The key is taken as short as possible, so a
// key holding ` (X)` itself (`/x (GET)/y (GET)`) still ends where the last
// such group begins.
const ROUTE = new RegExp(`^(.*?)${TAIL.source}`)
const ROUTE_TAIL = new RegExp(`^${TAIL.source}`)

function startsWithAny (line: string, prefixes: readonly string[], pos: number): boolean {
  return prefixes.some((prefix) => line.startsWith(prefix, pos))
}

function route (path: string, methods: string, constraints: string | undefined): PrintedRoute & { meta: Map<string, unknown> } {
  return { path, methods: methods.split(', '), constraints: constraints ?? '', meta: new Map() }
}

// find-my-way writes each meta value with JSON.stringify; anything else is kept as text.
function json (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** The routes drawn by `printRoutes()` (merged tree, default `commonPrefix`), in drawing order. */
export function parseRouteTree (text: string): PrintedRoute[] {
  const routes: PrintedRoute[] = []
  const keys: string[] = []
  let nodeKey = ''
  let last: (PrintedRoute & { meta: Map<string, unknown> }) | null = null
  for (const line of text.split('\n')) {
    let pos = 0
    while (startsWithAny(line, INDENTS, pos)) pos += 4
    const depth = pos / 4
    if (startsWithAny(line, BRANCHES, pos)) {
      // A node: its key, and its first route when it has one.
      const content = line.slice(pos + 4)
      const match = ROUTE.exec(content)
      nodeKey = match === null ? content : match[1] as string
      keys.length = depth
      keys.push(depth === 0 && nodeKey === EMPTY_ROOT ? '' : nodeKey)
      last = match === null ? null : route(keys.join(''), match[2] as string, match[3])
      if (last !== null) routes.push(last)
      continue
    }
    // Otherwise a line under the last node: a meta line of its last route, or
    // another route of that node (the key drawn again).
    const content = line.slice(pos)
    if (last !== null && content.startsWith(META)) {
      const close = content.indexOf(') ', META.length)
      if (close !== -1) last.meta.set(content.slice(META.length, close), json(content.slice(close + 2)))
    } else if (depth > 0 && content.startsWith(nodeKey)) {
      const match = ROUTE_TAIL.exec(content.slice(nodeKey.length))
      if (match !== null) {
        last = route(keys.join(''), match[1] as string, match[2])
        routes.push(last)
      }
    }
  }
  return routes
}
