// Generates JSON schemas from the TypeScript types Grafana publishes in @grafana/schema
// (pinned in package.json), with ts-json-schema-generator. Output: json/*.json, one per type.
// Run: npm ci && node generate.mjs [outdir]
import { createGenerator } from "ts-json-schema-generator";
import { mkdirSync, writeFileSync, readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = process.argv[2] || join(here, "json");
const raw = join(here, "node_modules/@grafana/schema/dist/esm/raw");
const pkg = (name) => JSON.parse(readFileSync(join(here, "node_modules", name, "package.json"))).version;

// The dashboard model, and the options/fieldConfig.custom of every panel type our dashboards use.
const panelTypes = {
  timeseries: ["Options", "FieldConfig"],
  stat: ["Options"],
  table: ["Options", "FieldConfig"],
  text: ["Options"],
};
const targets = [{ file: "dashboard.json", path: join(raw, "dashboard/x/dashboard_types.gen.d.ts"), type: "Dashboard" }];
for (const [panel, types] of Object.entries(panelTypes)) {
  const dir = join(raw, "composable", panel, "panelcfg/x");
  const base = { timeseries: "TimeSeries", stat: "Stat", table: "Table", text: "Text" }[panel];
  for (const type of types) {
    targets.push({ file: `panel-${panel}-${type.toLowerCase()}.json`, path: join(dir, `${base}PanelCfg_types.gen.d.ts`), type });
  }
}

mkdirSync(outDir, { recursive: true });
const generatedFrom = { "@grafana/schema": pkg("@grafana/schema"), "ts-json-schema-generator": pkg("ts-json-schema-generator") };
for (const t of targets) {
  const config = { path: t.path, type: t.type, skipTypeCheck: true, expose: "export", topRef: true, jsDoc: "extended",
    additionalProperties: false, tsconfig: join(here, "tsconfig.json") };
  const schema = createGenerator(config).createSchema(t.type);
  schema.$comment = `Generated from @grafana/schema ${generatedFrom["@grafana/schema"]} (${t.path.slice(raw.length + 1)}, type ${t.type}) by ts-json-schema-generator ${generatedFrom["ts-json-schema-generator"]}; do not edit.`;
  writeFileSync(join(outDir, t.file), JSON.stringify(schema, null, 2) + "\n");
}
console.log(`wrote ${targets.length} schemas to ${outDir}`);
