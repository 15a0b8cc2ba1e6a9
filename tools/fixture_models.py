"""The tiny transformers models tools/make_fixtures.py exports for the
families added after GPT-2 and Llama (build_new_model), and the export-time
patch of Mixtral's and Qwen2-MoE's sparse MoE blocks (trace_every_expert). Run by developers
only (needs tools/requirements-dev.txt)."""
from fixture_specs import ARCHS

SEED = 1234  # make_fixtures.py's: the committed fixtures were made with it


def build_new_model(arch: str, tok, perturb: bool = True):
    """The families added after gpt2/llama: tiny configs, random weights, init range
    0.1; every bias and every norm weight perturbed by 0.1 * N(0, 1) (HF inits them
    to 0 / 1 / 0, which would hide a wrong or missing bias or norm weight)."""
    import torch
    import transformers as tf

    a = ARCHS[arch]
    tid = tok.token_to_id
    V = a["vocab_size"]
    common = dict(vocab_size=V, num_hidden_layers=2, num_attention_heads=4,
                  max_position_embeddings=128, initializer_range=0.1)
    torch.manual_seed(SEED)
    if arch == "mistral":
        cfg = tf.MistralConfig(**common, hidden_size=64, intermediate_size=128,
                               num_key_value_heads=2, sliding_window=4096,
                               bos_token_id=tid("<s>"), eos_token_id=tid("</s>"),
                               pad_token_id=None, tie_word_embeddings=False)
        model = tf.MistralForCausalLM(cfg)
    elif arch == "qwen2":
        cfg = tf.Qwen2Config(**common, hidden_size=64, intermediate_size=172,
                             num_key_value_heads=2, rope_theta=1e6, use_sliding_window=False,
                             bos_token_id=tid("<|endoftext|>"),
                             eos_token_id=tid("<|endoftext|>"), tie_word_embeddings=False)
        model = tf.Qwen2ForCausalLM(cfg)
    elif arch == "qwen3":
        cfg = tf.Qwen3Config(**common, hidden_size=64, intermediate_size=128,
                             num_key_value_heads=2, head_dim=16, rope_theta=1e6,
                             use_sliding_window=False, bos_token_id=tid("<|endoftext|>"),
                             eos_token_id=tid("<|endoftext|>"), tie_word_embeddings=False)
        model = tf.Qwen3ForCausalLM(cfg)
    elif arch in ("phi3", "phi3h3"):
        heads = 3 if arch == "phi3h3" else 4
        common["num_attention_heads"] = heads
        cfg = tf.Phi3Config(**common, hidden_size=16 * heads, intermediate_size=128,
                            num_key_value_heads=heads, original_max_position_embeddings=128,
                            rope_scaling=None, partial_rotary_factor=1.0, sliding_window=None,
                            bos_token_id=tid("<s>"), eos_token_id=tid("<|endoftext|>"),
                            pad_token_id=None, tie_word_embeddings=False)
        model = tf.Phi3ForCausalLM(cfg)
    elif arch == "gptneox":
        cfg = tf.GPTNeoXConfig(**common, hidden_size=64, intermediate_size=172,
                               rotary_pct=0.25, rotary_emb_base=10000,
                               use_parallel_residual=True, hidden_act="gelu",
                               attention_bias=True, bos_token_id=tid("<|endoftext|>"),
                               eos_token_id=tid("<|endoftext|>"), tie_word_embeddings=False)
        model = tf.GPTNeoXForCausalLM(cfg)
    elif arch == "opt":
        cfg = tf.OPTConfig(vocab_size=V, hidden_size=64, num_hidden_layers=2, ffn_dim=128,
                           num_attention_heads=4, max_position_embeddings=128,
                           do_layer_norm_before=True, word_embed_proj_dim=64,
                           activation_function="relu", enable_bias=True, init_std=0.1,
                           pad_token_id=tid("<pad>"), bos_token_id=tid("</s>"),
                           eos_token_id=tid("</s>"), tie_word_embeddings=True)
        model = tf.OPTForCausalLM(cfg)
    elif arch == "gemma":
        cfg = tf.GemmaConfig(**common, hidden_size=64, intermediate_size=128,
                             num_key_value_heads=1, head_dim=16,
                             hidden_act="gelu_pytorch_tanh",
                             hidden_activation="gelu_pytorch_tanh",
                             pad_token_id=tid("<pad>"), bos_token_id=tid("<bos>"),
                             eos_token_id=tid("<eos>"), tie_word_embeddings=False)
        model = tf.GemmaForCausalLM(cfg)
    elif arch == "gemma2":
        cfg = tf.Gemma2Config(**common, hidden_size=64, intermediate_size=96,
                              num_key_value_heads=2, head_dim=24, sliding_window=12,
                              attn_logit_softcapping=2.0, final_logit_softcapping=5.0,
                              query_pre_attn_scalar=24, hidden_activation="gelu_pytorch_tanh",
                              pad_token_id=tid("<pad>"), bos_token_id=tid("<bos>"),
                              eos_token_id=tid("<eos>"), tie_word_embeddings=False)
        model = tf.Gemma2ForCausalLM(cfg)
    elif arch == "gemma3":
        cfg = tf.Gemma3TextConfig(**common, hidden_size=48, intermediate_size=80,
                                  num_key_value_heads=1, head_dim=16, sliding_window=10,
                                  sliding_window_pattern=2, rope_local_base_freq=10000.0,
                                  rope_theta=1e6, query_pre_attn_scalar=16,
                                  pad_token_id=tid("<pad>"), bos_token_id=tid("<bos>"),
                                  eos_token_id=tid("<eos>"), tie_word_embeddings=False)
        model = tf.Gemma3ForCausalLM(cfg)
    elif arch == "mistralw":
        cfg = tf.MistralConfig(**common, hidden_size=64, intermediate_size=112,
                               num_key_value_heads=1, head_dim=16,
                               sliding_window=12, bos_token_id=tid("<s>"),
                               eos_token_id=tid("</s>"), pad_token_id=None,
                               tie_word_embeddings=False)
        model = tf.MistralForCausalLM(cfg)
    elif arch == "granite":
        cfg = tf.GraniteConfig(**common, hidden_size=64, intermediate_size=96,
                               num_key_value_heads=2, logits_scaling=4.0,
                               embedding_multiplier=3.0, residual_multiplier=0.5,
                               attention_multiplier=0.2, bos_token_id=tid("<|endoftext|>"),
                               eos_token_id=tid("<|endoftext|>"), pad_token_id=None,
                               tie_word_embeddings=False)
        model = tf.GraniteForCausalLM(cfg)
    elif arch == "olmo2":
        cfg = tf.Olmo2Config(**common, hidden_size=72, intermediate_size=88,
                             num_key_value_heads=2, bos_token_id=tid("<|endoftext|>"),
                             eos_token_id=tid("<|endoftext|>"), pad_token_id=None,
                             tie_word_embeddings=False)
        model = tf.Olmo2ForCausalLM(cfg)
    elif arch == "falcon":
        cfg = tf.FalconConfig(vocab_size=V, num_hidden_layers=2, num_attention_heads=4,
                              hidden_size=64, new_decoder_architecture=False, multi_query=True,
                              parallel_attn=True, bias=False, alibi=False,
                              max_position_embeddings=128, initializer_range=0.1,
                              bos_token_id=tid("<|endoftext|>"),
                              eos_token_id=tid("<|endoftext|>"), tie_word_embeddings=False)
        model = tf.FalconForCausalLM(cfg)
    elif arch == "stablelm":
        cfg = tf.StableLmConfig(**common, hidden_size=64, intermediate_size=96,
                                num_key_value_heads=2, partial_rotary_factor=0.25,
                                use_qkv_bias=True, bos_token_id=tid("<|endoftext|>"),
                                eos_token_id=tid("<|endoftext|>"), tie_word_embeddings=False)
        model = tf.StableLmForCausalLM(cfg)
    elif arch == "phi2":
        cfg = tf.PhiConfig(**common, hidden_size=64, intermediate_size=96,
                           partial_rotary_factor=0.5, bos_token_id=tid("<|endoftext|>"),
                           eos_token_id=tid("<|endoftext|>"), tie_word_embeddings=False)
        model = tf.PhiForCausalLM(cfg)
    elif arch == "qwen3moe":
        cfg = tf.Qwen3MoeConfig(**common, hidden_size=48, intermediate_size=64,
                                moe_intermediate_size=24, num_experts=8,
                                num_experts_per_tok=2, norm_topk_prob=True,
                                decoder_sparse_step=1, mlp_only_layers=[],
                                num_key_value_heads=2, head_dim=16, rope_theta=1e6,
                                bos_token_id=tid("<|endoftext|>"),
                                eos_token_id=tid("<|endoftext|>"), tie_word_embeddings=False)
        model = tf.Qwen3MoeForCausalLM(cfg)
    elif arch == "qwen2moe":
        # Shapes unlike the other MoE fixtures: 6 experts, top 3 not
        # renormalized, a shared expert (its own intermediate) behind a
        # sigmoid gate, q/k/v biases.
        cfg = tf.Qwen2MoeConfig(**common, hidden_size=40, intermediate_size=56,
                                moe_intermediate_size=20, shared_expert_intermediate_size=36,
                                num_experts=6, num_experts_per_tok=3, norm_topk_prob=False,
                                decoder_sparse_step=1, mlp_only_layers=[],
                                num_key_value_heads=2, rope_theta=1e6,
                                use_sliding_window=False, qkv_bias=True,
                                bos_token_id=tid("<|endoftext|>"),
                                eos_token_id=tid("<|endoftext|>"), tie_word_embeddings=False)
        model = tf.Qwen2MoeForCausalLM(cfg)
    elif arch == "starcoder2":
        # LayerNorm with bias, biases on every projection, a GELU (tanh) MLP
        # without a gate, GQA, the real models' 4096-token sliding window.
        cfg = tf.Starcoder2Config(**common, hidden_size=56, intermediate_size=112,
                                  num_key_value_heads=2, hidden_act="gelu_pytorch_tanh",
                                  use_bias=True, norm_epsilon=1e-5, sliding_window=4096,
                                  rope_theta=1e5, bos_token_id=tid("<|endoftext|>"),
                                  eos_token_id=tid("<|endoftext|>"), tie_word_embeddings=False)
        model = tf.Starcoder2ForCausalLM(cfg)
    elif arch in ("mixtral", "mixtralsel"):
        # mixtralsel, unlike mixtral: 3 experts of intermediate 20, hidden 40, MQA.
        hidden, ffn, kv, experts = (40, 20, 1, 3) if arch == "mixtralsel" else (48, 24, 2, 4)
        cfg = tf.MixtralConfig(**common, hidden_size=hidden, intermediate_size=ffn,
                               num_key_value_heads=kv, num_local_experts=experts,
                               num_experts_per_tok=2, sliding_window=None,
                               bos_token_id=tid("<s>"), eos_token_id=tid("</s>"),
                               pad_token_id=None, tie_word_embeddings=False)
        model = tf.MixtralForCausalLM(cfg)
    elif arch == "bert":
        cfg = tf.BertConfig(vocab_size=V, hidden_size=64, num_hidden_layers=2,
                            num_attention_heads=4, intermediate_size=128, hidden_act="gelu",
                            max_position_embeddings=128, type_vocab_size=2,
                            initializer_range=0.1, pad_token_id=tid("[PAD]"))
        model = tf.BertModel(cfg)
    else:
        raise ValueError(arch)
    if not perturb:
        return model.eval()
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith(".bias") or ("norm" in n.lower() and n.endswith(".weight")):
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


def trace_every_expert(softmax_after_selection: bool = False):
    """transformers 4.57's Mixtral and Qwen2-MoE loop over `expert_hit`, the experts its
    input picked: a trace keeps only those, and the graph ONNX Runtime then
    runs is wrong (or fails) for other inputs. For the export, its sparse MoE
    block loops over every expert instead, as Qwen3-MoE's does: the same
    arithmetic, each expert still on only its routed tokens.

    softmax_after_selection: Mixtral routes as Mistral's reference code does,
    the top k of the router's logits, then a softmax over those k (equal to
    the renormalized top-k probabilities, but another graph)."""
    import torch
    import torch.nn.functional as F
    from transformers.models.mixtral import modeling_mixtral as mm

    def routed(block, x, weights, selected):
        """Every expert on its routed rows of x, weighted, summed (index_add_)."""
        out = torch.zeros_like(x)
        mask = F.one_hot(selected, num_classes=block.num_experts).permute(2, 1, 0)
        for e in range(block.num_experts):
            idx, top_x = torch.where(mask[e])
            y = block.experts[e](x[None, top_x].reshape(-1, x.shape[-1]))
            out.index_add_(0, top_x, (y * weights[top_x, idx, None]).to(x.dtype))
        return out

    def forward(self, hidden_states):
        b, s, h = hidden_states.shape
        x = hidden_states.view(-1, h)
        router_logits = self.gate(x)
        if softmax_after_selection:
            weights, selected = torch.topk(router_logits, self.top_k, dim=-1)
            weights = F.softmax(weights, dim=1, dtype=torch.float)
        else:
            weights = F.softmax(router_logits, dim=1, dtype=torch.float)
            weights, selected = torch.topk(weights, self.top_k, dim=-1)
            weights /= weights.sum(dim=-1, keepdim=True)
        out = routed(self, x, weights.to(x.dtype), selected)
        return out.reshape(b, s, h), router_logits

    mm.MixtralSparseMoeBlock.forward = forward

    from transformers.models.qwen2_moe import modeling_qwen2_moe as qm

    def qwen2_forward(self, hidden_states):
        b, s, h = hidden_states.shape
        x = hidden_states.view(-1, h)
        router_logits = self.gate(x)
        weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        weights, selected = torch.topk(weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            weights /= weights.sum(dim=-1, keepdim=True)
        out = routed(self, x, weights.to(x.dtype), selected)
        shared = F.sigmoid(self.shared_expert_gate(x)) * self.shared_expert(x)
        return (out + shared).reshape(b, s, h), router_logits

    qm.Qwen2MoeSparseMoeBlock.forward = qwen2_forward
