export * from './checkpoint-note.js';
export * from './cosignature.js';
export * from './signed-note.js';
export * from './tiles.js';
export * from './witness.js';
