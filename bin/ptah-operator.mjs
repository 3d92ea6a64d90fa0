#!/usr/bin/env node
// Entry point for `ptah-operator`, the manager: the bundle in dist/ when it is current, else the sources through tsx.
import { launch } from './launch.mjs';

await launch('ptah-operator', 'src/controller/main.ts');
