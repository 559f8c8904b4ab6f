// The Platform component from TypeScript, under Pulumi's Node mocks: the SDK registers
// fusioninfer:index:Platform with the inputs the program gave, under the schema's names (what the
// provider's Construct decodes, provider/schema.json), nested parts included.
import * as pulumi from "@pulumi/pulumi";
import * as assert from "assert";

(async () => {
    const registered: { type: string; name: string; inputs: any }[] = [];
    await pulumi.runtime.setMocks({
        newResource(args: pulumi.runtime.MockResourceArgs) {
            registered.push({ type: args.type, name: args.name, inputs: args.inputs });
            return { id: args.name + "-id", state: args.inputs };
        },
        call(args: pulumi.runtime.MockCallArgs) {
            return args.inputs;
        },
    }, "project", "stack", false);
    await pulumi.runtime.runInPulumiStack(async () => {
        const fusioninfer: typeof import("@fusioninfer/pulumi-fusioninfer") = require("@fusioninfer/pulumi-fusioninfer");
        const platform = new fusioninfer.Platform("platform", {
            controllers: false,
            keda: { install: false },
            prometheusOperatorCRDs: { install: false },
            volcano: { schedulerConfiguration: "actions: enqueue, allocate" },
        });
        return { urn: platform.urn }; // the stack's outputs: runInPulumiStack waits for the registration
    });
    const platforms = registered.filter(r => r.type === "fusioninfer:index:Platform");
    assert.strictEqual(platforms.length, 1, JSON.stringify(registered));
    assert.strictEqual(platforms[0].name, "platform");
    assert.deepStrictEqual(platforms[0].inputs, {
        controllers: false,
        keda: { install: false },
        prometheusOperatorCRDs: { install: false },
        volcano: { schedulerConfiguration: "actions: enqueue, allocate" },
    });
    console.log("Platform: registered with the schema's names");
})().catch(err => {
    console.error(err);
    process.exit(1);
});
