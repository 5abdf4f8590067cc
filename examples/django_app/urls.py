from django.urls import path

from . import views

urlpatterns = [
    path("orders/<slug:order_id>/summary", views.summary),
    path("stream", views.stream),
]
