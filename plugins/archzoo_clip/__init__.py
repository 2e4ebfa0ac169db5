"""archzoo plugin: CLIP, the image and text dual encoder, as transformers 5.23 builds it (model type ``clip``)."""
