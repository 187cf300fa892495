// ES module resolve hook of test/compat/aliases.cjs: the same map, for
// `import` (the examples are ES modules). Requests from inside node_modules
// are left alone.
let aliases = {}

export function initialize (data) {
  aliases = data.aliases
}

export async function resolve (specifier, context, nextResolve) {
  const parent = context.parentURL ?? ''
  if (!parent.includes('/node_modules/')) {
    for (const [name, alias] of Object.entries(aliases)) {
      if (specifier === name || specifier.startsWith(name + '/')) {
        return nextResolve(alias + specifier.slice(name.length), context)
      }
    }
  }
  return nextResolve(specifier, context)
}
