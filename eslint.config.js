'use strict'

module.exports = [
  ...require('neostandard')({
    ignores: require('neostandard').resolveIgnoresFromGitignore(),
    ts: true
  }),
  {
    // V8 allocates a function literal assigned straight to a property
    // (`obj.f = () => …`, `obj[k] = function …`) in the old generation, where
    // it keeps what it captures alive through every scavenge until the next
    // mark-compact: per request, whole requests promoted (docs/benchmarks.md,
    // "Findings"). In the library, such functions are made by a small
    // function that returns them.
    files: ['lib/**/*.ts'],
    rules: {
      'no-restricted-syntax': ['error', ...[
        'AssignmentExpression[left.type="MemberExpression"][right.type=/^(Arrow)?FunctionExpression$/]',
        'AssignmentExpression[left.type="MemberExpression"][right.type=/^TS(As|Satisfies|NonNull)Expression$/][right.expression.type=/^(Arrow)?FunctionExpression$/]'
      ].map((selector) => ({
        selector,
        message: 'A function literal assigned to a property is allocated in V8\'s old generation (docs/benchmarks.md, "Findings"): make it in a small function that returns it.'
      }))]
    }
  }
]
