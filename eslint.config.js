import neostandard from 'neostandard'
import { importX } from 'eslint-plugin-import-x'
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript'

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
  },
  // No module imports one that imports it back, however far round: the layers below stay
  // loadable on their own, and the order modules load in never decides what a value is.
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { ...importX.flatConfigs.typescript.settings, 'import-x/resolver-next': [createTypeScriptImportResolver()] },
    rules: { 'import-x/no-cycle': 'error' }
  },
  // The layers, each importing only the ones under it: lib/ (plain code, no Fastify app),
  // plugins/external/ (libraries' wrappers), plugins/app/ (what every route shares), routes/.
  {
    files: ['lib/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/plugins/**', '**/routes/**'], message: 'lib/ is plain code: it imports no plugin and no route.' }] }] }
  },
  {
    files: ['plugins/external/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/app/**', '**/routes/**'], message: 'plugins/external/ wraps libraries: it imports no app plugin and no route.' }] }] }
  },
  {
    files: ['plugins/app/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/routes/**'], message: 'plugins/app/ is what every route shares: it imports no route.' }] }] }
  }
]
