/** Whether dist/ holds this bundle and nothing under src/ (nor package.json, nor scripts/build.ts) is newer than the build. */
export function bundleIsCurrent(bundle: string): boolean;
export function launch(program: string, source: string): Promise<void>;
