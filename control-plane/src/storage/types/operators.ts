// ---- Operator roles (docs/console.md#who) ----

/** `operator` runs the instance from the console; `auditor` reads and exports only. */
export type OperatorRole = 'operator' | 'auditor';

export interface StoredOperatorRole {
  identityId: string;
  role: OperatorRole;
  grantedAt: number;
  /** The identity id of the operator who granted it; null for the admin token and the founder's own. */
  grantedBy: string | null;
}

export interface OperatorStore {
  roleOf(identityId: string): Promise<OperatorRole | null>;
  /** Every account holding a role, operators first, then by identity id. */
  list(): Promise<StoredOperatorRole[]>;
  /** Sets the role (a grant replaces the previous role). */
  grant(record: StoredOperatorRole): Promise<void>;
  /** False when the account held no role. */
  revoke(identityId: string): Promise<boolean>;
  /** How many accounts hold `operator`; read inside the transaction that would lower it. */
  countOperators(): Promise<number>;
}
