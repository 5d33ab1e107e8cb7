export * from './absence.js';
export * from './canonical-json.js';
export * from './checkpoint.js';
export * from './merkle-tree.js';
export * from './receipt.js';
export * from './verify-receipt.js';
export * from './verify-chain.js';
export * from './audit-epoch.js';
