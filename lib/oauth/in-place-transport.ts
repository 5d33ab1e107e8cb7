/**
 * How a sign-in reached the client; every transport leaves the same `signin.in_place` receipt.
 * A module of its own, importing nothing: access rules name the transports without importing the
 * in-place flow (which reaches client metadata, and through it the access rules again).
 */
export type InPlaceTransport = 'redirect' | 'popup' | 'fedcm' | 'direct';
