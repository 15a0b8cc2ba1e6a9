"""The fixture families and fixtures tools/make_fixtures.py generates: each
architecture's tokenizer settings (ARCHS), the fixture names with their
architecture and exporter (FIXTURES), and the notes recorded in each
fixture's reference.json (FEATURES, UNIT_NOTE). Data only."""

# vocab_size: of the tokenizer and the model; special: special tokens, lowest ids
# first; bos/eos/unk/pad: their roles; prepend_bos: the tokenizer's
# post-processor prepends bos (else none, GPT-2 style; BERT: cls_sep).
ARCHS = {
    "gpt2": dict(
        vocab_size=512,
        special=["<|endoftext|>"], bos="<|endoftext|>", eos="<|endoftext|>",
        prepend_bos=False, optimum_opset=18, torch_opset=17,
    ),
    "llama": dict(
        vocab_size=1024,
        special=["<unk>", "<s>", "</s>", "<|endoftext|>"], bos="<s>", eos="</s>",
        unk="<unk>", prepend_bos=True, optimum_opset=18, torch_opset=17,
    ),
    "mistral": dict(
        vocab_size=1024,
        special=["<unk>", "<s>", "</s>"], bos="<s>", eos="</s>", unk="<unk>",
        prepend_bos=True, optimum_opset=18,
    ),
    "qwen2": dict(
        vocab_size=1024,
        special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos="<|endoftext|>", eos="<|endoftext|>", prepend_bos=False, optimum_opset=18,
    ),
    "phi3": dict(
        vocab_size=1024,
        special=["<unk>", "<s>", "</s>", "<|endoftext|>"], bos="<s>", eos="<|endoftext|>",
        unk="<unk>", prepend_bos=True, optimum_opset=18,
    ),
    # Phi-3 with 3 heads (hidden 48): a head count that 2 and 4 ranks do not
    # divide, for tensor parallelism (4 ranks leave one rank without heads).
    "phi3h3": dict(
        vocab_size=1024,
        special=["<unk>", "<s>", "</s>", "<|endoftext|>"], bos="<s>", eos="<|endoftext|>",
        unk="<unk>", prepend_bos=True, optimum_opset=18, tokenizer_from="phi3-optimum",
    ),
    "gptneox": dict(
        vocab_size=512,
        special=["<|endoftext|>", "<|padding|>"], bos="<|endoftext|>", eos="<|endoftext|>",
        prepend_bos=False, optimum_opset=18,
    ),
    "opt": dict(
        vocab_size=512,
        special=["<s>", "<pad>", "</s>", "<unk>"], bos="</s>", eos="</s>", unk="<unk>",
        pad="<pad>", prepend_bos=True, optimum_opset=18,
    ),
    "gemma": dict(
        vocab_size=1024,
        special=["<pad>", "<eos>", "<bos>", "<unk>"], bos="<bos>", eos="<eos>", unk="<unk>",
        pad="<pad>", prepend_bos=True, optimum_opset=18,
    ),
    "gemma2": dict(
        vocab_size=1024,
        special=["<pad>", "<eos>", "<bos>", "<unk>"], bos="<bos>", eos="<eos>", unk="<unk>",
        pad="<pad>", prepend_bos=True, optimum_opset=18, tokenizer_from="gemma-optimum",
    ),
    "gemma3": dict(
        vocab_size=1024,
        special=["<pad>", "<eos>", "<bos>", "<unk>"], bos="<bos>", eos="<eos>", unk="<unk>",
        pad="<pad>", prepend_bos=True, optimum_opset=18, tokenizer_from="gemma-optimum",
    ),
    "qwen3": dict(
        vocab_size=1024,
        special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos="<|endoftext|>", eos="<|endoftext|>", prepend_bos=False, optimum_opset=18,
        tokenizer_from="qwen2-optimum",
    ),
    # Families on byte-level BPE vocabularies: the qwen2 fixture's tokenizer.
    "granite": dict(
        vocab_size=1024,
        special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos="<|endoftext|>", eos="<|endoftext|>", prepend_bos=False, optimum_opset=18,
        tokenizer_from="qwen2-optimum",
    ),
    "olmo2": dict(
        vocab_size=1024,
        special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos="<|endoftext|>", eos="<|endoftext|>", prepend_bos=False, optimum_opset=18,
        tokenizer_from="qwen2-optimum",
    ),
    "falcon": dict(
        vocab_size=1024,
        special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos="<|endoftext|>", eos="<|endoftext|>", prepend_bos=False, optimum_opset=18,
        tokenizer_from="qwen2-optimum",
    ),
    "stablelm": dict(
        vocab_size=1024,
        special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos="<|endoftext|>", eos="<|endoftext|>", prepend_bos=False, optimum_opset=18,
        tokenizer_from="qwen2-optimum",
    ),
    "phi2": dict(
        vocab_size=1024,
        special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos="<|endoftext|>", eos="<|endoftext|>", prepend_bos=False, optimum_opset=18,
        tokenizer_from="qwen2-optimum",
    ),
    "qwen3moe": dict(
        vocab_size=1024,
        special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos="<|endoftext|>", eos="<|endoftext|>", prepend_bos=False, optimum_opset=18,
        tokenizer_from="qwen2-optimum",
    ),
    "qwen2moe": dict(
        vocab_size=1024,
        special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos="<|endoftext|>", eos="<|endoftext|>", prepend_bos=False, optimum_opset=18,
        tokenizer_from="qwen2-optimum", onnx_config="qwen2",
    ),
    "starcoder2": dict(
        vocab_size=1024,
        special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos="<|endoftext|>", eos="<|endoftext|>", prepend_bos=False, optimum_opset=18,
        tokenizer_from="qwen2-optimum", onnx_config="qwen2",
    ),
    "mixtral": dict(
        vocab_size=1024,
        special=["<unk>", "<s>", "</s>"], bos="<s>", eos="</s>", unk="<unk>",
        prepend_bos=True, optimum_opset=18, tokenizer_from="mistral-optimum",
        onnx_config="mistral",
    ),
    "mixtralsel": dict(
        vocab_size=1024,
        special=["<unk>", "<s>", "</s>"], bos="<s>", eos="</s>", unk="<unk>",
        prepend_bos=True, optimum_opset=18, tokenizer_from="mistral-optimum",
        onnx_config="mistral",
    ),
    "mistralw": dict(
        vocab_size=1024,
        special=["<unk>", "<s>", "</s>"], bos="<s>", eos="</s>", unk="<unk>",
        prepend_bos=True, optimum_opset=18, tokenizer_from="mistral-optimum",
    ),
    "bert": dict(
        vocab_size=512,
        special=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], bos=None, eos=None,
        unk="[UNK]", pad="[PAD]", cls_sep=("[CLS]", "[SEP]"), prepend_bos=False,
        encoder=True, optimum_opset=18,
    ),
}

# name -> (arch, exporter); exporter "optimum", "torch" (TorchScript at the
# arch's torch_opset), "torch14" (TorchScript at opset 14) or "dynamo".
FIXTURES = {
    "gpt2-optimum": ("gpt2", "optimum"),
    "gpt2-torch": ("gpt2", "torch"),
    "llama-optimum": ("llama", "optimum"),
    "llama-torch": ("llama", "torch"),
    "llama-torch14": ("llama", "torch14"),
    "llama-dynamo": ("llama", "dynamo"),
    "mistral-optimum": ("mistral", "optimum"),
    "qwen2-optimum": ("qwen2", "optimum"),
    "phi3-optimum": ("phi3", "optimum"),
    "phi3-3heads-optimum": ("phi3h3", "optimum"),
    "gptneox-optimum": ("gptneox", "optimum"),
    "opt-optimum": ("opt", "optimum"),
    "gemma-optimum": ("gemma", "optimum"),
    "gemma2-optimum": ("gemma2", "optimum"),
    "gemma3-optimum": ("gemma3", "optimum"),
    "mistral-window-optimum": ("mistralw", "optimum"),
    "granite-optimum": ("granite", "optimum"),
    "olmo2-optimum": ("olmo2", "optimum"),
    "falcon-optimum": ("falcon", "optimum"),
    "stablelm-optimum": ("stablelm", "optimum"),
    "phi2-optimum": ("phi2", "optimum"),
    "qwen3-moe-optimum": ("qwen3moe", "optimum"),
    "mixtral-optimum": ("mixtral", "optimum"),
    "qwen2-moe-optimum": ("qwen2moe", "optimum"),
    "mixtral-softmax-after-optimum": ("mixtralsel", "optimum"),
    "starcoder2-optimum": ("starcoder2", "optimum"),
    "bert-optimum": ("bert", "optimum"),
    "qwen3-optimum": ("qwen3", "optimum"),
    "llama-optimum-unit": ("llama", "optimum"),
    "mistral-optimum-unit": ("mistral", "optimum"),
    "qwen2-optimum-unit": ("qwen2", "optimum"),
    "qwen3-optimum-unit": ("qwen3", "optimum"),
    "phi3-optimum-unit": ("phi3", "optimum"),
    "gpt2-torch14-unit": ("gpt2", "torch14"),
    "bert-optimum-unit": ("bert", "optimum"),
}

# Fixtures whose norm weights and biases keep transformers' init (1 and 0).
UNIT = {n for n in FIXTURES if n.endswith("-unit")}
UNIT_NOTE = ("transformers' own initialization, not perturbed: every norm weight is exactly "
             "1 and every bias exactly 0, so cleanup folds x * 1 and x + 0 away before "
             "injection runs")


# Notes recorded in reference.json ("model" -> "features") for the new families.
FEATURES = {
    "mistral": "GQA (4 query / 2 KV heads), RoPE, RMSNorm, SwiGLU; sliding_window 4096 "
               "(larger than any sequence used, so it never masks anything)",
    "qwen2": "GQA (4 query / 2 KV heads), q/k/v projections with bias (perturbed, not "
             "zero), RoPE theta 1e6, RMSNorm, SwiGLU with intermediate 172",
    "phi3": "fused qkv_proj ([q; k; v] rows) and gate_up_proj ([gate; up] rows), full "
            "rotary (partial_rotary_factor 1), rope_scaling None, MHA, RMSNorm, SwiGLU",
    "phi3h3": "Phi-3 with 3 heads of 16 (hidden 48): fused qkv_proj and gate_up_proj, full "
              "rotary, MHA; a head count 2 and 4 tensor-parallel ranks do not divide",
    "gptneox": "rotary_pct 0.25 (RoPE on the first 4 of 16 head dims, NeoX rotate_half), "
               "use_parallel_residual (x + attn(ln1(x)) + mlp(ln2(x))), fused "
               "query_key_value with per-head interleaved [q k v] rows, GELU (erf), "
               "LayerNorm, untied embed_out",
    "opt": "learned positions (table offset 2; position_ids is a graph input, the last "
           "one, after the past tensors), do_layer_norm_before (pre-LN), ReLU MLP, "
           "biases, tied lm_head",
    "gemma": "GeGLU (gelu_pytorch_tanh), input embeddings scaled by sqrt(hidden)=8, "
             "RMSNorm computing x*(1+w), MQA (4 query heads / 1 KV head, head_dim 16); "
             "lm_head untied, unlike real Gemma: with tied random weights and the x8 input "
             "scaling, greedy decoding only ever repeats its input token (the export "
             "stores a tied matrix twice anyway, so the graph has the same shape)",
    "gemma2": "Gemma 2: sliding window 12 on layer 0 (local), the whole context on layer 1 "
              "(global), attention logits soft-capped at 2 and final logits at 5, "
              "query_pre_attn_scalar 24, GQA (4 query / 2 KV heads) with head_dim 24 "
              "(heads * head_dim != hidden 64), pre- and post-norms around attention and "
              "MLP, GeGLU (gelu_pytorch_tanh), embeddings scaled by sqrt(hidden)",
    "gemma3": "Gemma 3 (text): sliding window 10 on layer 0 (local, rope base 1e4), the "
              "whole context on layer 1 (global, rope base 1e6), per-head q/k RMSNorm, "
              "MQA (4 query heads / 1 KV head, head_dim 16), hidden 48, no position_ids "
              "input (positions numbered from the past length)",
    "mistralw": "Mistral with sliding_window 12 on every layer (shorter than the prompts "
                "and generations the tests use), MQA (4 query heads / 1 KV head), "
                "intermediate 112",
    "granite": "Granite: embeddings x 3, attention scale 0.2 (attention_multiplier), "
               "residuals x 0.5, logits / 4 after the head (logits_scaling), GQA 4/2, "
               "SwiGLU, hidden 64",
    "olmo2": "OLMo 2: RMSNorm after attention and after the MLP (post-norms, no "
             "pre-norms), q/k RMSNorm over the whole projection (not per head), GQA 4/2, "
             "hidden 72 (head_dim 18)",
    "falcon": "Falcon (7B layout): multi-query attention (one KV head), parallel "
              "attention and MLP from one LayerNorm, fused query_key_value, GELU MLP, "
              "no biases, rotary, hidden 64",
    "stablelm": "StableLM: LayerNorm with bias, partial rotary 0.25, q/k/v biases, GQA "
                "(4 query / 2 KV heads), SwiGLU, hidden 64",
    "phi2": "Phi-2: parallel attention and MLP from one LayerNorm, partial rotary 0.5, "
            "biases everywhere, GELU (tanh) MLP, dense output projection, hidden 64",
    "qwen3moe": "Qwen3-MoE: 8 experts of intermediate 24, top 2 with norm_topk_prob "
                "(renormalized), a softmax router without bias, per-head q/k RMSNorm, GQA "
                "(4 query / 2 KV heads, head_dim 16), hidden 48; transformers 4.57 exports "
                "every expert (NonZero rows, gated MLP, ScatterElements + Add)",
    "qwen2moe": "Qwen2-MoE: 6 experts of intermediate 20, top 3 not renormalized, a "
                "shared expert (intermediate 36) scaled by sigmoid(x @ shared_expert_gate), "
                "q/k/v biases, GQA (4 query / 2 KV heads, head_dim 10), hidden 40; exported "
                "looping over every expert, as Mixtral",
    "starcoder2": "Starcoder2: LayerNorm with bias, biases on q/k/v/o and the MLP, a GELU "
                  "(tanh) MLP without a gate (c_fc, c_proj), GQA (4 query / 2 KV heads, "
                  "head_dim 14), sliding_window 4096 in config.json, hidden 56; Optimum "
                  "has no Starcoder2 config, so Qwen2's (the same inputs and outputs)",
    "mixtralsel": "Mixtral routed as Mistral's reference code: the top 2 of the router's "
                  "logits, then a softmax over those 2; 3 experts of intermediate 20, MQA (4 "
                  "query / 1 KV head), hidden 40; traced over every expert",
    "mixtral": "Mixtral: 4 experts of intermediate 24, top 2 renormalized, GQA (4 query / "
               "2 KV heads), hidden 48; exported with its sparse MoE block looping over "
               "every expert (transformers 4.57 loops over the experts its example input "
               "hit, whose trace ONNX Runtime cannot run on other inputs)",
    "qwen3": "GQA (4 query / 2 KV heads), head_dim 16, per-head RMSNorm of q and k "
             "(q_norm / k_norm over head_dim, before rotary), no q/k/v bias, RoPE theta 1e6, "
             "RMSNorm, SwiGLU",
    "bert": "encoder (BertModel): word + learned position + token type embeddings, "
            "post-LN (LayerNorm after each residual add), GELU (erf), bidirectional "
            "attention with padding mask; byte-level BPE tokenizer (not WordPiece) with "
            "[CLS] $A [SEP] post-processor",
}
