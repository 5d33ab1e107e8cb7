import { MIGRATION_PLAN_SCHEMA, TRUST_PROFILE_SCHEMA } from '#lib/profiles/documents.js';

/**
 * The published document schemas (components.schemas in /openapi.json). app.ts adds them at the
 * root before any area, without loading the rollout routes, which refer to them by `$id`.
 */
export const ROLLOUT_SCHEMAS = [TRUST_PROFILE_SCHEMA, MIGRATION_PLAN_SCHEMA];
