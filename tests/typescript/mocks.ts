// Runs every TypeScript example under Pulumi's Node mocks and writes, per example, the inputs its
// InferenceService registration carries (what the engine would send the provider's Construct) to
// $FUSIONINFER_TS_INPUTS/<example>.json. tests/crosslang feeds them to the provider.
import * as pulumi from "@pulumi/pulumi";
import * as fs from "fs";
import * as path from "path";

const outDir = process.env.FUSIONINFER_TS_INPUTS;
if (!outDir) {
    throw new Error("FUSIONINFER_TS_INPUTS must name the directory for the captured inputs");
}
const examplesDir = path.join(__dirname, "..", "..", "examples", "typescript");

async function run(example: string): Promise<void> {
    const captured: { type: string; name: string; inputs: any }[] = [];
    await pulumi.runtime.setMocks({
        newResource(args: pulumi.runtime.MockResourceArgs) {
            captured.push({ type: args.type, name: args.name, inputs: args.inputs });
            return { id: args.name + "-id", state: args.inputs };
        },
        call(args: pulumi.runtime.MockCallArgs) {
            return args.inputs;
        },
    }, "project", "stack", false);
    await pulumi.runtime.runInPulumiStack(async () => {
        return require(path.join(examplesDir, example, "index"));
    });
    const services = captured.filter(r => r.type === "fusioninfer:index:InferenceService");
    if (services.length !== 1) {
        throw new Error(`${example}: ${services.length} InferenceService registrations, want 1`);
    }
    fs.writeFileSync(path.join(outDir!, example + ".json"), JSON.stringify(services[0], null, 2));
    console.log(`${example}: captured the inputs of ${services[0].name}`);
}

(async () => {
    for (const example of fs.readdirSync(examplesDir)) {
        await run(example);
    }
})().catch(err => {
    console.error(err);
    process.exit(1);
});
