// The docs' testing block imports vitest (what `nest new` generates). vitest
// is not a dependency of this repository, so for the snippet type-check the
// names that block uses are typed as jest's, which have the same shape there.
// A script file (no import or export), so this declares the module.
declare module 'vitest' {
  export { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, test } from '@jest/globals';
}
