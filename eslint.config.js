// @ts-check
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import rxjsX from 'eslint-plugin-rxjs-x';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['dist/**', 'node_modules/**', 'bench/**', 'docs/**', '.tmp/**'] },
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.recommended, rxjsX.configs.recommended],
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
    },
  },
  {
    // Tests subscribe to assert (a subscription they drop completes by itself), and an empty stream where a value is
    // expected should fail loudly with EmptyError rather than pass with a default.
    files: ['test/**/*.ts', 'marbles/**/*.ts'],
    rules: { 'rxjs-x/no-ignored-subscription': 'off', 'rxjs-x/no-ignored-default-value': 'off' },
  },
);
