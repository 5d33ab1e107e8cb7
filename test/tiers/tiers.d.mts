// Types of ./tiers.mjs, for the TypeScript tests that use it.
export type Tier = 'unit' | 'integration' | 'e2e';
export type Storage = 'sqlite' | 'postgres';
export interface Placed {
  file: string;
  tiers: { tier: Tier; storage?: Storage }[];
  reasons: string[];
}
export const TIERS: Tier[];
export const ROOT: string;
export function listTestFiles(root?: string): string[];
export function importsOf(source: string): { specifier: string; names: string[] | null }[];
export function classify(files?: string[], root?: string): Placed[];
export function tierRuns(tier: Tier, placed?: Placed[]): { storage?: Storage; files: string[] }[];
export function relativeToRoot(path: string): string;
export function needsOwnProcess(source: string): boolean;
export function processTimeoutOf(source: string): number | undefined;
export function groupFiles(
  files: string[],
  options?: { size?: number; root?: string },
): { groups: string[][]; alone: string[] };
export function groupEntry(files: string[], timeoutMs: number): string;
export function failureTrail(failures: string[]): { read(line: string): void };
