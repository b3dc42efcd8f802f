// Lint rules. The context core must stay pure: no Node built-ins and none of the I/O libraries,
// so it can be tested with plain data and reused anywhere (STYLE.md, "A pure core").
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const ioLibraries = [
  'fastify',
  'fastify/*',
  'undici',
  'undici/*',
  'ioredis',
  'pino',
  'js-tiktoken',
  'js-tiktoken/*',
  'prom-client',
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.scratch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        performance: 'readonly',
        structuredClone: 'readonly',
        fetch: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-syntax': [
        'error',
        { selector: 'ExportDefaultDeclaration', message: 'Named exports only.' },
      ],
    },
  },
  {
    files: [
      'src/context/**/*.ts',
      'src/upstream/classify-upstream-error.ts',
      'src/upstream/sse.ts',
      'src/budget/budget-rules.ts',
      'src/upstream/recovery-policy.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'The context core is pure: no Node built-ins.' },
            { group: ioLibraries, message: 'The context core is pure: no I/O libraries; use a port.' },
            {
              group: ['../chat/*', '../sessions/*', '../http/*', '../responses/*'],
              message: 'The core does not reach up into the application layer.',
            },
          ],
        },
      ],
    },
  },
  {
    // Sessions are the chat engine's to use; they call the provider through upstream/, never chat/.
    files: ['src/sessions/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['../chat/*'], message: 'sessions/ does not import chat/ (chat/ imports sessions/).' },
          ],
        },
      ],
    },
  },
  {
    // An object literal with a getter, built per request in render.ts, kept the whole request alive
    // through young collections until the next full one (measured on the 2 KB request path: ~3 KB
    // promoted and ~2 µs of scavenging per request; gone with a function instead). A class's accessors
    // live on its prototype.
    //
    // The same on Node 20 for an object literal that starts with a spread and goes on: `{ ...a, key }`
    // or `{ ...a, ...b }`. Its V8 (11.3) makes a new hidden class for every such object, ~1.4 µs and
    // ~1.1 KB each, and the object outlives young collections (`{ ...a, x, y, z }` in a loop: 1,451 ns
    // an object on Node 20, 23 ns on Node 22; with Object.assign 80 ns on both, a literal 15). Three of
    // these on the chat path (two more on a stream's) cost a 2 KB request 1.6 KB promoted and 8.5 µs in
    // process, 20-27 µs of CPU in the running gateway. Write the keys first (`{ key, ...a }`, when `a`
    // cannot hold `key`), the whole literal, or `Object.assign({}, a, { key })` (slower past ~20 keys:
    // a spread copy whose keys are only overwritten is fine). Objects with methods are built once, at
    // start-up, and are left as they are.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'ExportDefaultDeclaration', message: 'Named exports only.' },
        {
          selector: "ObjectExpression > Property[kind='get'], ObjectExpression > Property[kind='set']",
          message:
            'No getters or setters in object literals (each gets a hidden class of its own): use a function or a class.',
        },
        {
          selector:
            "ObjectExpression[properties.0.type='SpreadElement'][properties.length>1]:not(:has(Property[method=true]))",
          message:
            'No object literal that starts with a spread and goes on (Node 20 gives each a hidden class of its own, ~1.4 µs): put the keys first, write the literal out, or use Object.assign({}, a, { key }).',
        },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/main.ts', 'src/config/load-config.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Only main.ts and the config loader read the environment.',
        },
      ],
    },
  },
  {
    // The inspector's page runs in the browser.
    files: ['ui/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: {
        window: 'readonly',
        document: 'readonly',
        location: 'readonly',
        sessionStorage: 'readonly',
        fetch: 'readonly',
        Node: 'readonly',
        URLSearchParams: 'readonly',
        getComputedStyle: 'readonly',
      },
    },
  },
  {
    files: ['eslint.config.js', 'scripts/**/*.mjs'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
