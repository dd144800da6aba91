import neostandard from 'neostandard'

// The Fastify organisation's style: standard, with TypeScript.
export default [
  ...neostandard({
    ts: true,
    // What .gitignore leaves out: built, generated or data.
    ignores: ['dist/**', 'coverage/**', '.tap/**', '.data/**', 'bench/results/**', 'examples/client/api.d.ts']
  }),
  {
    rules: {
      // `void promise;` marks a promise left to run on its own on purpose.
      'no-void': ['error', { allowAsStatement: true }],
      // TypeBox's idiom declares a schema and its type under one name (`const Client`, `type
      // Client`); TypeScript itself reports a real redeclaration.
      '@typescript-eslint/no-redeclare': 'off'
    }
  }
]
