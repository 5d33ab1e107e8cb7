import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse as parseYaml } from 'yaml';
import { ASSURANCE_LEVELS, type AssuranceLevel } from '../assurance/assurance.js';
import { validateRedirectUriForRegistration } from '../oauth/redirect-uri.js';
import { validateResourceForRegistration } from '../oauth/resource.js';

/**
 * The two declared documents of a rollout (docs/rollout.md#documents): the project trust profile
 * (`project-trust-profile/v1`) and the migration plan (`migration-plan/v1`). Each has ONE JSON
 * schema: ajv validates with it here, and the control plane publishes the same object in
 * /openapi.json `components.schemas`.
 */

export const TRUST_PROFILE_CONTRACT = 'project-trust-profile/v1';
export const MIGRATION_PLAN_CONTRACT = 'migration-plan/v1';

const PROJECT = {
  type: 'string',
  pattern: '^[a-z0-9][a-z0-9-]{0,62}$',
  description: 'Project name: lower-case letters, digits and dashes.',
} as const;
const URI_LIST = {
  type: 'array',
  maxItems: 20,
  uniqueItems: true,
  items: { type: 'string', minLength: 1, maxLength: 2000 },
} as const;

export const TRUST_PROFILE_SCHEMA = {
  $id: 'ProjectTrustProfile',
  title: 'project-trust-profile/v1',
  description:
    'What a project declares about itself; signed by the control plane as a compact JWS (typ project-trust-profile+jwt).',
  type: 'object',
  additionalProperties: false,
  required: ['contract', 'project', 'exposure', 'principals', 'environments', 'data_class', 'required_assurance'],
  properties: {
    contract: { const: TRUST_PROFILE_CONTRACT },
    project: PROJECT,
    org: {
      type: 'string',
      pattern: '^[a-z0-9][a-z0-9-]{1,39}$',
      description: "Slug of the organization whose admins may read the project's slice.",
    },
    description: { type: 'string', maxLength: 500 },
    exposure: { enum: ['public', 'private', 'hybrid', 'custom'] },
    principals: {
      type: 'object',
      additionalProperties: false,
      required: ['humans', 'agents'],
      properties: { humans: { type: 'boolean' }, agents: { type: 'boolean' } },
    },
    environments: {
      type: 'array',
      minItems: 1,
      maxItems: 10,
      items: {
        type: 'object',
        additionalProperties: false,
        // `resources` is 0..20: an environment without APIs may leave it out (read as []).
        required: ['name', 'redirect_uris'],
        properties: {
          name: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,31}$' },
          redirect_uris: { ...URI_LIST, minItems: 1 },
          resources: URI_LIST,
        },
      },
    },
    data_class: { enum: ['public', 'internal', 'confidential', 'restricted'] },
    required_assurance: { enum: [...ASSURANCE_LEVELS] },
  },
} as const;

export const MIGRATION_PLAN_SCHEMA = {
  $id: 'MigrationPlan',
  title: 'migration-plan/v1',
  description:
    'How one app team moves a project onto its trust profile; signed by the control plane as a compact JWS (typ migration-plan+jwt).',
  type: 'object',
  additionalProperties: false,
  required: ['contract', 'project', 'profile_version', 'team', 'from', 'to', 'steps', 'rollback'],
  properties: {
    contract: { const: MIGRATION_PLAN_CONTRACT },
    project: PROJECT,
    profile_version: {
      type: 'integer',
      minimum: 1,
      description: "The version of the project's trust profile this plan applies.",
    },
    team: { type: 'string', minLength: 1, maxLength: 100, description: 'The app team that applies the plan.' },
    from: {
      enum: ['none', 'v1_bridge', 'own_sessions', 'oidc', 'saml'],
      description: 'How the app signs people in today.',
    },
    to: { enum: ['gateway', 'sdk', 'oidc'], description: 'The integration mode it moves to.' },
    steps: {
      type: 'array',
      minItems: 1,
      maxItems: 20,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['step'],
        properties: {
          step: { enum: ['classify', 'register', 'integrate', 'verify', 'canary', 'attest'] },
          percent: { type: 'integer', minimum: 0, maximum: 100 },
          not_before: { type: 'string', format: 'date' },
          note: { type: 'string', maxLength: 500 },
        },
      },
    },
    rollback: { type: 'string', minLength: 1, maxLength: 1000, description: 'How the team goes back if a step fails.' },
  },
} as const;

export interface ProfileEnvironment {
  name: string;
  redirect_uris: string[];
  resources: string[];
}

export interface TrustProfile {
  contract: typeof TRUST_PROFILE_CONTRACT;
  project: string;
  org?: string;
  description?: string;
  exposure: 'public' | 'private' | 'hybrid' | 'custom';
  principals: { humans: boolean; agents: boolean };
  environments: ProfileEnvironment[];
  data_class: 'public' | 'internal' | 'confidential' | 'restricted';
  required_assurance: AssuranceLevel;
}

export interface MigrationPlan {
  contract: typeof MIGRATION_PLAN_CONTRACT;
  project: string;
  profile_version: number;
  team: string;
  from: string;
  to: string;
  steps: Array<{ step: string; percent?: number; not_before?: string; note?: string }>;
  rollback: string;
}

export type DocumentKind = 'profile' | 'plan';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
// Compiled on first use, not at import: about 0.05 s of CPU that every process loading the
// control plane paid (docs/platform.md#test-tiers).
let validators: Record<DocumentKind, ValidateFunction> | undefined;
function validatorOf(kind: DocumentKind): ValidateFunction {
  if (!validators) {
    const ajv = addFormats(new Ajv({ allErrors: true, strict: true }));
    validators = { profile: ajv.compile(TRUST_PROFILE_SCHEMA), plan: ajv.compile(MIGRATION_PLAN_SCHEMA) };
  }
  return validators[kind];
}

/** A refused document: every problem, each naming where it is. */
export class DocumentError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
    this.name = 'DocumentError';
  }
}

function describe(error: ErrorObject): string {
  const where = error.instancePath === '' ? '(document)' : error.instancePath.slice(1).replace(/\//g, '.');
  if (error.keyword === 'additionalProperties')
    return `${where}: unknown member ${String(error.params['additionalProperty'])}`;
  if (error.keyword === 'enum')
    return `${where} must be one of: ${(error.params['allowedValues'] as unknown[]).join(', ')}`;
  if (error.keyword === 'const') return `${where} must be ${JSON.stringify(error.params['allowedValue'])}`;
  return `${where} ${error.message ?? 'is invalid'}`;
}

/** The rules a JSON schema cannot say: someone must be admitted, names and URIs must make sense. */
function profileRules(profile: TrustProfile): string[] {
  const problems: string[] = [];
  if (!profile.principals.humans && !profile.principals.agents)
    problems.push('principals must admit humans, agents or both');
  const names = new Set<string>();
  profile.environments.forEach((environment, i) => {
    if (names.has(environment.name)) problems.push(`environments.${i}.name repeats ${environment.name}`);
    names.add(environment.name);
    environment.redirect_uris.forEach((uri, j) => {
      const problem = validateRedirectUriForRegistration(uri);
      if (problem) problems.push(`environments.${i}.redirect_uris.${j} ${problem.message}`);
    });
    environment.resources.forEach((uri, j) => {
      const problem = validateResourceForRegistration(uri);
      if (problem) problems.push(`environments.${i}.resources.${j} ${problem}`);
    });
  });
  return problems;
}

/** Checks a parsed document against its kind's schema and rules; returns it typed or throws every problem. */
export function validateDocument(kind: 'profile', value: unknown): TrustProfile;
export function validateDocument(kind: 'plan', value: unknown): MigrationPlan;
export function validateDocument(kind: DocumentKind, value: unknown): TrustProfile | MigrationPlan;
export function validateDocument(kind: DocumentKind, value: unknown): TrustProfile | MigrationPlan {
  const validate = validatorOf(kind);
  if (!validate(value)) throw new DocumentError((validate.errors ?? []).map(describe));
  if (kind === 'profile') {
    const validated = value as Omit<TrustProfile, 'environments'> & {
      environments: (Omit<ProfileEnvironment, 'resources'> & { resources?: string[] })[];
    };
    const profile: TrustProfile = {
      ...validated,
      environments: validated.environments.map((environment) => ({
        ...environment,
        resources: environment.resources ?? [],
      })),
    };
    const problems = profileRules(profile);
    if (problems.length > 0) throw new DocumentError(problems);
    return profile;
  }
  return value as MigrationPlan;
}

/** Parses YAML or JSON text (JSON is YAML); anything that is not one mapping is refused. */
export function parseDocumentText(text: string): unknown {
  let value: unknown;
  try {
    value = parseYaml(text, { maxAliasCount: 0, uniqueKeys: true });
  } catch (error) {
    throw new DocumentError([`not YAML or JSON: ${(error as Error).message.split('\n')[0]}`]);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new DocumentError(['the document must be one mapping (an object)']);
  return value;
}

/** Which kind a parsed document says it is, by its `contract`; null for neither. */
export function kindOfDocument(value: unknown): DocumentKind | null {
  const contract = (value as { contract?: unknown } | null)?.contract;
  if (contract === TRUST_PROFILE_CONTRACT) return 'profile';
  if (contract === MIGRATION_PLAN_CONTRACT) return 'plan';
  return null;
}
