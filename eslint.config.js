import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * No class over `max` lines, counted as max-lines-per-function counts a function's: a class is a
 * room as a function is, and classes escaped the function cap (issue 45).
 */
const maxClassLines = {
  meta: { type: 'suggestion', schema: [{ type: 'object', properties: { max: { type: 'integer' } } }] },
  create(context) {
    const max = context.options[0]?.max ?? 200;
    const check = (node) => {
      const lines = node.loc.end.line - node.loc.start.line + 1;
      if (lines > max) {
        const name = node.id?.name ?? 'anonymous class';
        context.report({
          node,
          message: `Class '${name}' has too many lines (${lines}). Maximum allowed is ${max}.`,
        });
      }
    };
    return { ClassDeclaration: check, ClassExpression: check };
  },
};
const local = { rules: { 'max-class-lines': maxClassLines } };

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.toolchain/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        fetch: 'readonly',
        performance: 'readonly',
        structuredClone: 'readonly',
        queueMicrotask: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // Rooms a newcomer can take in at once (issue 24): no source file over 400 lines, counted as
    // plain lines, blank lines and comments included, and no function over 120.
    files: ['packages/*/src/**', 'services/*/src/**'],
    plugins: { local },
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }],
      'max-lines-per-function': ['error', { max: 120, skipBlankLines: false, skipComments: false }],
      'local/max-class-lines': ['error', { max: 200 }],
    },
  },
  {
    // A benchmark's steps are functions a reader can follow one at a time: its main names them.
    files: ['test/bench/**'],
    rules: {
      'max-lines-per-function': ['error', { max: 150, skipBlankLines: false, skipComments: false }],
    },
  },
  {
    // Migrations are frozen in time, so kysely recommends they not depend on today's schema types.
    // Nor do they answer to the size limits: each is the SQL that once ran on every database and is
    // never edited again, so splitting one would change nothing but its history.
    files: ['packages/db/src/migrations/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      'max-lines': 'off',
      'max-lines-per-function': 'off',
    },
  },
  {
    // In Node 24 an ES import of a value from node:http builds the module's whole namespace, whose
    // WebSocket getters load undici (fetch's engine): megabytes on the API's heap, kept for good by
    // a process that uses neither, and a larger heap makes every mark-compact longer
    // (docs/benchmarks/api.md, "Less code on the API's heap").
    // So the API and the packages it loads take node:http's values from
    // process.getBuiltinModule('node:http'), which does not; `import type` is free.
    files: ['services/api/src/**', 'packages/{broker,contracts,db,runtime,settings}/src/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['node:http', 'http'].map((name) => ({
            name,
            allowTypeImports: true,
            message: "Use process.getBuiltinModule('node:http'): an ES import loads undici.",
          })),
        },
      ],
    },
  },
  {
    // CLIs, scripts, benchmarks, tests and the SDK's examples talk to a terminal on purpose.
    files: [
      'packages/tripctl/**',
      'scripts/**',
      'test/**',
      '**/test/**',
      'packages/testkit/**',
      'examples/**',
    ],
    rules: { 'no-console': 'off' },
  },
  {
    // Tests poke at JSON bodies whose shape the schemas (not the types) check.
    files: ['test/**', '**/test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
