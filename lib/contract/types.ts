// The contract's types, one file a mechanism under types/; this barrel keeps `contract/types.js` imports working.
export type * from './types/wake.js';
export type * from './types/stream.js';
export type * from './types/queue.js';
export type * from './types/outbox.js';
export type * from './types/inbox.js';
export type * from './types/lock.js';
export type * from './types/schedule.js';
export type * from './types/tx.js';
export type * from './types/store.js';
