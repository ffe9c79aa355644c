// ESLint's configuration for mm's JavaScript (the runtime SDK and drivers, backends/runtimes/js),
// run by scripts/check-format.sh: ESLint's recommended rules, CommonJS on Node.js 20.
'use strict';

const js = require('@eslint/js');
const globals = require('globals');

module.exports = [
  js.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'commonjs',
      globals: {...globals.node},
    },
    rules: {
      // An unused argument may name what a callback receives; an unused variable is an error.
      'no-unused-vars': ['error', {args: 'none'}],
      'no-var': 'error',
      'prefer-const': 'error',
      eqeqeq: ['error', 'always'],
      strict: ['error', 'global'],
    },
  },
];
