"""Tiny random LLaVA and BLIP models with a tokenizer made here (no download)."""

WORDS = (
    "[PAD] [UNK] [CLS] [SEP] [MASK] yes no was the image taken at night does have show is this a an "
    "square circle with of on in reply simply or ' ? . , : user assistant"
).split()


def tiny_tokenizer(folder):
    from transformers import BertTokenizerFast

    return BertTokenizerFast(vocab={w: i for i, w in enumerate(WORDS)}, do_lower_case=True)


def tiny_llava(folder, seed=0):
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tok = tiny_tokenizer(folder)
    tok.add_special_tokens({"additional_special_tokens": ["<image>"]})
    image_id = tok.convert_tokens_to_ids("<image>")
    template = (
        "{% for m in messages %}user : {% for c in m['content'] %}{% if c['type'] == 'image' %}<image> "
        "{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endfor %} assistant :"
    )
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}),
        tokenizer=tok,
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=template,
    )
    cfg = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=28,
            patch_size=14,
        ),
        text_config=LlamaConfig(
            vocab_size=len(tok),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=256,
            pad_token_id=tok.pad_token_id,
        ),
        image_token_index=image_id,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(seed)
    return LlavaForConditionalGeneration(cfg).eval(), processor


def tiny_blip(folder, seed=0):
    import torch
    from transformers import BlipConfig, BlipForQuestionAnswering, BlipImageProcessor, BlipProcessor

    tok = tiny_tokenizer(folder)
    processor = BlipProcessor(image_processor=BlipImageProcessor(size={"height": 28, "width": 28}), tokenizer=tok)
    cfg = BlipConfig(
        vision_config=dict(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=28,
            patch_size=14,
        ),
        text_config=dict(
            vocab_size=len(tok),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=128,
            encoder_hidden_size=16,
            bos_token_id=tok.cls_token_id,
            pad_token_id=tok.pad_token_id,
            sep_token_id=tok.sep_token_id,
        ),
    )
    torch.manual_seed(seed)
    return BlipForQuestionAnswering(cfg).eval(), processor
