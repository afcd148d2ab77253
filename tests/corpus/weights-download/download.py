from sentence_transformers import SentenceTransformer

SentenceTransformer("all-MiniLM-L6-v2")
