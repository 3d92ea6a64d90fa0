#!/usr/bin/env node
// Entry point for `ptah-runner`, the in-Pod wrapper around `ptah`: the bundle in dist/ when it is current, else the sources through tsx.
import { launch } from './launch.mjs';

await launch('ptah-runner', 'src/runner/cli.ts');
