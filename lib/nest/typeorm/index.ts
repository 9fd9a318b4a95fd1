export * from './run-transaction.js';
export * from './alkstore-transactions.service.js';
