export * from './orm-adapter.js';
export * from './orm-transactions.service.js';
