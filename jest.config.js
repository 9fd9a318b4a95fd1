/** Jest 30 + ts-jest in ESM mode. Run through `npm test` (sets --experimental-vm-modules). */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json', isolatedModules: true, diagnostics: false }],
  },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  globalSetup: '<rootDir>/test/helpers/global-setup.js',
  testTimeout: 60000,
  maxWorkers: process.env.CI ? 2 : '50%',
  reporters: ['default', '<rootDir>/test/helpers/summary-reporter.cjs'],
};
