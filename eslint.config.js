// @ts-check
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import rxjsX from 'eslint-plugin-rxjs-x';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['dist/**', 'node_modules/**', 'bench/**', 'docs/**', '.tmp/**'] },
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked, rxjsX.configs.recommended],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // The four the project promises (DESIGN/STYLE): the first three come with `recommended`, stated again so they stay on.
      'rxjs-x/no-nested-subscribe': 'error',
      'rxjs-x/no-internal': 'error',
      'rxjs-x/no-async-subscribe': 'error',
      'rxjs-x/no-ignored-subscription': 'error',
      // STYLE: `first`, `last`, `lastValueFrom` get a default so "no middleware" is an ordinary case.
      'rxjs-x/no-ignored-default-value': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      // Re-throwing or re-rejecting what was caught (an `unknown`) is not inventing a non-Error reason.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // An `async` method that does not await still turns a throw into a rejection: the Checkpointer methods rely on it.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Tests subscribe to assert (a subscription they drop completes by itself), and an empty stream where a value is
    // expected should fail loudly with EmptyError rather than pass with a default.
    files: ['test/**/*.ts', 'marbles/**/*.ts'],
    rules: {
      'rxjs-x/no-ignored-subscription': 'off',
      'rxjs-x/no-ignored-default-value': 'off',
      // Tests read what crossed the wire (request bodies the local servers recorded, parsed SSE events) as `any` on
      // purpose, and assert it field by field: a typed copy of every vendor wire format would be the test's own guess.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
    },
  },
);
