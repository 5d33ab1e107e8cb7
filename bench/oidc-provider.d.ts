// oidc-provider ships no types; the benchmark uses a handful of its APIs untyped.
declare module 'oidc-provider';
