#!/usr/bin/env -S node --max-semi-space-size=4
// Entry point for the `ptah` CLI: the bundle in dist/ when it is current, else the sources through tsx.
import { launch } from './launch.mjs';

await launch('ptah', 'src/cli/ptah.ts');
