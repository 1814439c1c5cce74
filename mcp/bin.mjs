#!/usr/bin/env node
// The MCP stdio server as an npm bin (`skill-analytics-mcp --db <venue.duckdb>`): registers tsx so the TypeScript
// sources run as they are, then starts mcp/stdio.ts. Nothing but JSON-RPC goes to stdout.
import { register } from 'tsx/esm/api';

register();
await import('./stdio.ts');
