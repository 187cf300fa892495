'use strict'

const sonarjs = require('eslint-plugin-sonarjs')

module.exports = [
  ...require('neostandard')({
    ignores: require('neostandard').resolveIgnoresFromGitignore(),
    ts: true
  }),
  // Readable by rule (lib/ only): lines of at most 120 characters, code and comments (URLs excepted); a function's
  // cognitive complexity at most 15; at most 5 parameters. Import cycles: .dependency-cruiser.cjs.
  {
    files: ['lib/**/*.ts'],
    plugins: { sonarjs },
    rules: {
      '@stylistic/max-len': ['error', { code: 120, ignoreUrls: true }],
      'sonarjs/cognitive-complexity': ['error', 15],
      'max-params': ['error', 5]
    }
  }
]
