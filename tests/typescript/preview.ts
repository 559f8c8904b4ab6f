// Runs a program at preview under Pulumi's Node mocks: its pod template takes an env value from a
// ConfigMap whose data is unknown until the update. Writes the InferenceService registration's
// inputs, with each unknown value as the engine's unknown marker, to
// $FUSIONINFER_TS_INPUTS/preview-unknown-env.json; tests/crosslang constructs them through the
// provider at preview and checks that the unknown is kept, not dropped.
import * as pulumi from "@pulumi/pulumi";
import * as fs from "fs";
import * as path from "path";

// The engine's marker of a value unknown at preview (the same in every language's SDK).
const unknownMarker = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

function withMarkers(v: any): any {
    if (pulumi.Output.isInstance(v) || (v && v.constructor && v.constructor.name === "Unknown")) {
        return unknownMarker;
    }
    if (Array.isArray(v)) {
        return v.map(withMarkers);
    }
    if (v && typeof v === "object") {
        return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, withMarkers(e)]));
    }
    return v;
}

(async () => {
    const outDir = process.env.FUSIONINFER_TS_INPUTS;
    if (!outDir) {
        throw new Error("FUSIONINFER_TS_INPUTS must name the directory for the captured inputs");
    }
    const captured: { type: string; name: string; inputs: any }[] = [];
    await pulumi.runtime.setMocks({
        newResource(args: pulumi.runtime.MockResourceArgs) {
            captured.push({ type: args.type, name: args.name, inputs: withMarkers(args.inputs) });
            // The ConfigMap's outputs are not known at preview.
            return { id: args.name + "-id", state: args.type === "kubernetes:core/v1:ConfigMap" ? {} : args.inputs };
        },
        call(args: pulumi.runtime.MockCallArgs) {
            return args.inputs;
        },
    }, "project", "stack", true);
    await pulumi.runtime.runInPulumiStack(async () => {
        // Loaded once the mocks are set, as the examples are (mocks.ts).
        return require("./preview-program");
    });
    const services = captured.filter(r => r.type === "fusioninfer:index:InferenceService");
    if (services.length !== 1) {
        throw new Error(`${services.length} InferenceService registrations, want 1 (registered: ${captured.map(r => r.type)})`);
    }
    fs.writeFileSync(path.join(outDir, "preview-unknown-env.json"), JSON.stringify(services[0], null, 2));
    console.log(`preview: captured the inputs of ${services[0].name}: ${JSON.stringify(services[0].inputs.roles[0].template.spec.containers[0].env)}`);
})().catch(err => {
    console.error(err);
    process.exit(1);
});
